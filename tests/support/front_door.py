"""Test support: the commands the README and docs/ tell a reader to paste, and the lines of `make examples`,
read from those very files and run against a served coordinator, so the documents cannot drift from
what works.

A block runs as pasted when the line before its ```bash fence is `<!-- runs as pasted -->`. It runs in
bash with `-euo pipefail`, from the repository's root, with two substitutions only: the served
coordinator's URL for `http://127.0.0.1:8080` (the address of `make serve`), and this interpreter's
folder for `.venv/bin/` (the suite's environment is the one `make` builds).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support import REPO

ROOT = REPO
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAKEFILE = ROOT / "Makefile"
MARKER = "<!-- runs as pasted -->"
SERVE_URL = "http://127.0.0.1:8080"
BIN = Path(sys.executable).parent


def pasted_blocks(document: Path) -> list[str]:
    """The bash blocks of a document marked to run as pasted, in order."""
    return re.findall(rf"^{re.escape(MARKER)}\n```bash\n(.*?)^```$", document.read_text(), re.M | re.S)


def run_pasted(block: str, url: str) -> subprocess.CompletedProcess[str]:
    """One pasted block against the coordinator at `url`; fails the test with its output unless it exits 0."""
    script = block.replace(SERVE_URL, url).replace(".venv/bin/", f"{BIN}/")
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, (
        f"exit {done.returncode}:\n{script}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    )
    return done


def make_target_lines(target: str) -> list[str]:
    """The recipe lines of a Makefile target, as written (`$(BIN)/python examples/x.py $(URL)`)."""
    text = MAKEFILE.read_text()
    match = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", text, re.M)
    assert match is not None, f"the Makefile has no target {target}"
    return [line.strip() for line in match.group(1).splitlines()]


def example_jobs() -> list[str]:
    """The scripts `make examples` runs, in its order (the install line is the suite's environment)."""
    jobs = []
    for line in make_target_lines("examples"):
        if line.startswith("$(PIP)"):
            continue
        match = re.fullmatch(r"\$\(BIN\)/python (examples/\w+\.py) \$\(URL\)", line)
        assert match is not None, f"make examples runs something this test does not: {line}"
        jobs.append(match.group(1))
    return jobs


def run_job(script: str, url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """One line of `make examples`, with this interpreter, from `cwd` (where a job keeps examples-work)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / script), url],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, (
        f"{script} exited {done.returncode}:\n{done.stdout}\n--- stderr\n{done.stderr[-6000:]}"
    )
    return done
