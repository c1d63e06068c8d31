"""A pypaimon REST client that knows nothing of the store: `python -m tests.rest_catalog.s3_client_process
URL TOKEN` gets only the coordinator's URI, the catalog name and a token, then creates a table, writes and
commits twice and prints the rows it reads back as JSON. Its storage access comes from the coordinator
(`data-token.enabled`, GET .../token)."""

from __future__ import annotations

import json
import sys

import pyarrow as pa

from tests.support.rest_writers import create_rest_table, read_rows, rest_catalog, write_rows

SCHEMA = pa.schema([pa.field("dt", pa.string()), pa.field("id", pa.int64())])
BATCHES = [[{"dt": "a", "id": 1}, {"dt": "b", "id": 2}], [{"dt": "a", "id": 3}]]


def main(url: str, token: str) -> None:
    catalog = rest_catalog(url, token)
    create_rest_table(catalog, "lake.events", SCHEMA, partition_keys=["dt"])
    for batch in BATCHES:
        write_rows(catalog.get_table("lake.events"), pa.Table.from_pylist(batch, schema=SCHEMA))
    print(json.dumps(read_rows(catalog.get_table("lake.events"))), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
