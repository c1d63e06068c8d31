"""Who owns which folder: one location, one table, and a purge that never leaves a table's own folder."""

from __future__ import annotations

from sqlalchemy import Connection

from coordinator.db import repositories as repo
from coordinator.db.models import TableRow
from coordinator.domain.locations import ancestor_keys, contains, is_root, location_key, overlaps
from coordinator.errors import PurgeRefused

CREATED = "created"
"""`paimon_tables.origin` of a table whose folder the coordinator made: purge may delete that folder."""
REGISTERED = "registered"
"""`paimon_tables.origin` of a table registered by location: its files were found, never purged."""


def overlapping_owner(
    conn: Connection, key: str, *, excluding: str | None = None
) -> repo.LocationOwner | None:
    """A table (other than `excluding`) whose folder is, encloses or lies inside the folder of `key`."""
    owners = repo.location_owners(conn, key, ancestor_keys(key), excluding=excluding)
    return next((o for o in owners if overlaps(o.location_key, key)), None)


def refuse_purge(conn: Connection, row: TableRow, root: str) -> None:
    """Raises PurgeRefused unless the row's location is the folder this coordinator made for it,
    inside the warehouse, and no other table's folder is, encloses or lies inside it."""
    if row.origin != CREATED:
        raise PurgeRefused(
            f"table {row.id} was registered by location: its files at {row.location} were found, not "
            "made by the coordinator, and are not purged; drop it without purge",
            field="purge",
        )
    made = f"{root}/{row.database}.db/{row.name}"
    try:
        key = location_key(row.location)
    except ValueError:
        key = ""
    # The folder create() makes is strictly inside the warehouse; anything else (an empty location,
    # the warehouse itself, a folder of an earlier warehouse setting) is not this purge's to delete.
    if not key or is_root(key) or key != location_key(made) or not contains(root, key):
        raise PurgeRefused(
            f"table {row.id}'s location {row.location!r} is not the folder this coordinator makes for "
            f"it ({made}); drop it without purge",
            field="purge",
        )
    clash = overlapping_owner(conn, key, excluding=row.id)
    if clash is not None:
        raise PurgeRefused(
            f"table {clash.id} at {clash.location} shares the folder of table {row.id}; drop without purge",
            field="purge",
        )


def in_use(location: str, key: str, owner: repo.LocationOwner) -> str:
    if owner.location_key == key:
        return f"{location} is already the location of table {owner.id}"
    if contains(owner.location_key, key):
        return f"{location} lies inside the folder of table {owner.id} ({owner.location})"
    return f"{location} encloses the folder of table {owner.id} ({owner.location})"
