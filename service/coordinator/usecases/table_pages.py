"""Tables as the table list and the overview show them, one keyset page at a time."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

from coordinator.db.models import TableRow
from coordinator.domain.table_stats import TableStats
from coordinator.errors import InvalidRequest
from paimon_format.schema import TableSchema


@dataclass(frozen=True)
class TableEntry:
    """A table as the table list and the overview show it: its row, its schema and its recorded size."""

    id: str
    database: str
    name: str
    uuid: str
    location: str
    schema: TableSchema
    latest_snapshot_id: int
    stats: TableStats
    last_commit_at: float | None
    created_at: float


@dataclass(frozen=True)
class TablePage:
    entries: list[TableEntry]
    next_page_token: str | None


def table_entry(row: TableRow) -> TableEntry:
    return TableEntry(
        row.id,
        row.database,
        row.name,
        row.uuid,
        row.location,
        TableSchema.from_json(row.schema_json),
        row.latest_snapshot_id,
        TableStats(row.total_record_count, row.file_count, row.file_bytes),
        row.last_commit_at,
        row.created_at,
    )


def encode_page_token(last: TableEntry) -> str:
    """Opaque to clients: where the next page starts, (database, name) of the last table listed."""
    raw = json.dumps([last.database, last.name], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(token: str) -> tuple[str, str]:
    """Raises:
    InvalidRequest: naming page_token, when the token is not one `encode_page_token` made.
    """
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        database, name = json.loads(raw)
    except (ValueError, TypeError):
        raise InvalidRequest("not a page token of this service", field="page_token") from None
    if not isinstance(database, str) or not isinstance(name, str):
        raise InvalidRequest("not a page token of this service", field="page_token")
    return database, name
