"""Quick start: a table, one real parquet file written into it, its commit, and pypaimon reading it back.

With `make serve` running (the embedded default, tables under ./warehouse):
`.venv/bin/python examples/quickstart.py [http://127.0.0.1:8080]`. It needs pyarrow (installed with the
client) and pypaimon (`.venv/bin/pip install -c requirements/constraints.txt pypaimon`).

The coordinator never writes data files: a writer (Spark, Flink, this script) writes them into the
table's folder in Paimon's layout (`<table>/<partition>/bucket-<n>/`) and sends the coordinator a commit
naming them. The coordinator checks each file on storage (its size, row count and columns), writes the
manifests and the snapshot, and the table stays a plain Paimon table that pypaimon reads straight from
storage. Each run commits three more rows as a new snapshot, so running it again is fine.
"""

from __future__ import annotations

import sys
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from coordinator_client import CoordinatorClient, NotFound
from coordinator_client.models import TableResponse

TABLE = "quickstart.trips"
DAY = "2026-11-20"
SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("trip_id", pa.int64(), nullable=False),
        pa.field("city", pa.string()),
        pa.field("fare", pa.decimal128(10, 2)),
    ]
)


def ensure_table(client: CoordinatorClient) -> TableResponse:
    """The append table, partitioned by day, created on the first run."""
    try:
        return client.get_table(TABLE)
    except NotFound:
        return client.create_table(
            {
                "database": "quickstart",
                "name": "trips",
                "fields": [
                    {"name": "dt", "type": "STRING NOT NULL"},
                    {"name": "trip_id", "type": "BIGINT NOT NULL"},
                    {"name": "city", "type": "STRING"},
                    {"name": "fare", "type": "DECIMAL(10, 2)"},
                ],
                "partitionKeys": ["dt"],
            }
        )


def read_back(table: TableResponse) -> list[dict[str, Any]]:
    """Every row of the table as pypaimon reads it from storage: a filesystem catalog on the warehouse."""
    from pypaimon import CatalogFactory

    warehouse = Path(table.location).parents[1]  # a table lives at <warehouse>/<database>.db/<name>
    paimon_table = CatalogFactory.create({"warehouse": str(warehouse)}).get_table(TABLE)
    builder = paimon_table.new_read_builder()
    arrow = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(arrow.to_pylist(), key=lambda row: row["trip_id"])


def main(url: str) -> list[dict[str, Any]]:
    """Commits three rows and returns them; exits with an error if pypaimon does not read them back."""
    with CoordinatorClient(url) as client:
        table = ensure_table(client)
        first = (table.total_record_count or 0) + 1
        rows = [
            {"dt": DAY, "trip_id": first, "city": "Lisbon", "fare": Decimal("12.50")},
            {"dt": DAY, "trip_id": first + 1, "city": "Porto", "fare": Decimal("8.20")},
            {"dt": DAY, "trip_id": first + 2, "city": "Faro", "fare": Decimal("23.75")},
        ]

        # 1. Write the data file where Paimon puts it: partition folder, then bucket folder.
        folder = Path(table.location) / f"dt={DAY}" / "bucket-0"
        folder.mkdir(parents=True, exist_ok=True)
        file_name = f"data-{uuid.uuid4()}-0.parquet"
        pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), folder / file_name)
        size = (folder / file_name).stat().st_size
        print(f"wrote {folder / file_name}: {len(rows)} rows, {size} bytes")

        # 2. Commit it: one CommitMessage for the partition and bucket, naming the file as it is.
        response = client.commit(
            TABLE,
            {
                "commitUser": "quickstart",
                "messages": [
                    {
                        "partition": {"dt": DAY},
                        "bucket": 0,
                        "newFiles": [{"fileName": file_name, "fileSize": size, "rowCount": len(rows)}],
                    }
                ],
            },
        )
        snapshot = response.snapshots[0]
        print(f"committed {TABLE} snapshot {snapshot.id} ({snapshot.commit_kind})")

        # 3. Read the table back with pypaimon, straight from storage.
        table = client.get_table(TABLE)
    read = read_back(table)
    print(f"pypaimon reads {len(read)} rows of {TABLE}:")
    for row in read:
        print(f"  {row['dt']}  trip {row['trip_id']:>4}  {row['city']:<8} {row['fare']}")
    missing = [row for row in rows if row not in read]
    if missing or len(read) != table.total_record_count:
        sys.exit(f"pypaimon did not read back what was committed: missing {missing}")
    return rows


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080")
