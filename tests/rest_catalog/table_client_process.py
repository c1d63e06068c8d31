"""A pypaimon REST client of one existing table that knows nothing of the store:
`python -m tests.rest_catalog.table_client_process URL TOKEN TABLE write|read` gets only the catalog
options (the coordinator's URI, the catalog name, a token, `data-token.enabled`), writes and commits two
batches (`write`) and prints the rows it then reads as JSON. Its storage access is whatever
GET .../token vends to its token."""

from __future__ import annotations

import json
import sys

import pyarrow as pa

from tests.support.rest_writers import read_rows, rest_catalog, write_rows

SCHEMA = pa.schema([pa.field("dt", pa.string()), pa.field("id", pa.int64())])
BATCHES = [[{"dt": "a", "id": 1}, {"dt": "b", "id": 2}], [{"dt": "a", "id": 3}]]


def main(url: str, token: str, table: str, mode: str) -> None:
    catalog = rest_catalog(url, token, **{"data-token.enabled": "true"})
    if mode == "write":
        for batch in BATCHES:
            write_rows(catalog.get_table(table), pa.Table.from_pylist(batch, schema=SCHEMA))
    print(json.dumps(read_rows(catalog.get_table(table))), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
