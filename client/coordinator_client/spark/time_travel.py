"""Which snapshot a batch read pins: the options `snapshot-id`, `tag` and `timestamp`, at most one.

Resolved on the driver when the reader is made, so a bad value fails the query before any task, naming
the option. Without any of them the read pins the latest snapshot when it plans (the scan plan's first
answer); a table without snapshots reads as empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone

from coordinator_client.client import CoordinatorClient
from coordinator_client.errors import NotFound
from coordinator_client.spark.options import OptionError, optional_int

SNAPSHOT_ID = "snapshot-id"
TAG = "tag"
TIMESTAMP = "timestamp"
BEFORE_FIRST = 0
"""The pin of a time before the table's first snapshot: the table was empty then."""
PAGE = 100
"""Snapshots asked for per request while looking for a timestamp."""


def pinned_snapshot(client: CoordinatorClient, table_id: str, options: Mapping[str, str]) -> int | None:
    """The snapshot the options name (BEFORE_FIRST: none yet at that time), or None for the latest when
    the read plans.

    Raises:
        OptionError: more than one of the options, a malformed value, or a snapshot, tag or time the
            table does not have.
    """
    given = [name for name in (SNAPSHOT_ID, TAG, TIMESTAMP) if options.get(name) is not None]
    if len(given) > 1:
        raise OptionError(given[1], f"give at most one of {', '.join(given)}")
    snapshot_id = optional_int(options, SNAPSHOT_ID, minimum=1)
    if snapshot_id is not None:
        try:
            client.get_snapshot(table_id, snapshot_id)
        except NotFound:
            raise OptionError(SNAPSHOT_ID, f"{table_id} has no snapshot {snapshot_id}") from None
        return snapshot_id
    tag = options.get(TAG)
    if tag is not None:
        tags = {t.name: t.snapshot_id for t in client.list_tags(table_id).tags}
        if tag not in tags:
            raise OptionError(TAG, f"{table_id} has no tag {tag!r} (its tags: {sorted(tags) or 'none'})")
        return tags[tag]
    text = options.get(TIMESTAMP)
    if text is not None:
        return snapshot_at(client, table_id, epoch_millis(text))
    return None


def epoch_millis(text: str) -> int:
    """A `timestamp` option as epoch milliseconds: digits as millis, else ISO-8601 (UTC when it names
    no offset: the worker planning a read does not know the Spark session's time zone)."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        raise OptionError(
            TIMESTAMP, f"expected epoch milliseconds or an ISO-8601 time, got {text!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def snapshot_at(client: CoordinatorClient, table_id: str, millis: int) -> int:
    """The newest snapshot committed at or before `millis` (BEFORE_FIRST: the table was empty then).

    Pages through the snapshots newest first, PAGE at a time: the cost grows with the number of
    snapshots committed after `millis` (one request per PAGE of them), not with the table's history.

    Raises:
        OptionError: `millis` is before the earliest snapshot still kept, which expiration removed the
            state of.
    """
    before: int | None = None
    oldest = None
    while True:
        page = client.list_snapshots(table_id, limit=PAGE, before=before).snapshots
        for snapshot in page:
            if snapshot.time_millis <= millis:
                return snapshot.id
        if not page:
            break
        oldest = page[-1]
        if len(page) < PAGE:
            break
        before = oldest.id
    if oldest is None or oldest.id == 1:
        return BEFORE_FIRST  # no snapshot yet, or a time before the table's first commit
    raise OptionError(
        TIMESTAMP,
        f"{table_id}'s earliest kept snapshot {oldest.id} was committed at {oldest.time_millis} ms, "
        f"after {millis}; the snapshots before it have expired",
    )
