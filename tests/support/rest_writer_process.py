"""One pypaimon REST writer as an OS process of its own:
`python -m tests.support.rest_writer_process URL TABLE WRITER COMMITS` commits COMMITS one-row batches,
row ids WRITER * 1000 + i, and prints how many it did."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa

from tests.support import REPO
from tests.support.rest_writers import rest_catalog, write_rows

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("writer", pa.int32())])


def main(url: str, table_id: str, writer: int, commits: int) -> None:
    table = rest_catalog(url).get_table(table_id)
    for i in range(commits):
        write_rows(table, pa.Table.from_pylist([{"id": writer * 1000 + i, "writer": writer}], schema=SCHEMA))
    print(commits, flush=True)


def start(url: str, table_id: str, writer: int, commits: int) -> subprocess.Popen[str]:
    """The writer started as a process of its own, its output piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.rest_writer_process", url, table_id, str(writer), str(commits)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
