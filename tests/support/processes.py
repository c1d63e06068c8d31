"""Child processes of tests and benchmarks (servers, object stores)."""

from __future__ import annotations

import subprocess


def stop_process(process: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """SIGTERM and wait (a server shuts down cleanly); SIGKILL if it hangs."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
