"""The bounds of every path and query parameter, declared once and shared by the routers.

Whatever a parameter carries reaches the database as a bound value, and the databases refuse what does
not fit their columns: PostgreSQL a BIGINT beyond 2^63-1 or a text holding NUL, SQLite an integer past
64 bits. Refused there, it would surface as a 500; bounded here, it is a 422 naming the parameter
(api/errors.py::validation_error), and the OpenAPI document tells callers the bounds up front.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Header, Path, Query

from coordinator_client.models import (
    COMMIT_USER_PATTERN,
    FILE_NAME_PATTERN,
    INT64_MAX,
    INT64_MIN,
    NAME_PATTERN,
    PRINTABLE_PATTERN,
    REF_NAME_PATTERN,
)

DEFAULT_PAGE = 100
MAX_PAGE = 1000
TABLE_ID_MAX = 257
"""database.name: two names of at most 128 characters and the dot."""
JSON_QUERY_MAX = 4096
"""A partition filter is a small JSON object; no partition spec is longer."""

TableId = Annotated[
    str,
    Path(min_length=1, max_length=TABLE_ID_MAX, pattern=PRINTABLE_PATTERN, description="database.name"),
]
SnapshotId = Annotated[int, Path(ge=1, le=INT64_MAX, description="a snapshot id")]
CommitUser = Annotated[str, Path(min_length=1, max_length=200, pattern=COMMIT_USER_PATTERN)]
# The full signed 64-bit range, as a commit body may carry it (Paimon's commitIdentifier is a Java long;
# a batch job sends Long.MAX_VALUE): the outcome of any commit that could be sent can be asked for.
Identifier = Annotated[int, Path(ge=INT64_MIN, le=INT64_MAX, description="the commit's identifier")]
RefName = Annotated[str, Path(pattern=REF_NAME_PATTERN, description="a tag name or consumer id")]
AssetName = Annotated[str, Path(pattern=FILE_NAME_PATTERN)]
"""A dashboard file: a plain file name, never a path."""
LockId = Annotated[str, Path(min_length=1, max_length=300, pattern=PRINTABLE_PATTERN)]
"""A lock id (locks.lock_id is a VARCHAR(300)), for POST /locks/{lock_id}/release in api/ops.py."""

PageLimit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="entries per page")]
TablesLimit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="tables per page")]
BeforeSnapshot = Annotated[
    int | None, Query(ge=1, le=INT64_MAX, description="only snapshots older than this id")
]
AtSnapshot = Annotated[
    int | None, Query(ge=1, le=INT64_MAX, description="the snapshot to read; the latest when absent")
]
ScanScope = Annotated[
    Literal["all", "delta"],
    Query(
        description="all: the live files at the snapshot; delta: only the files the snapshot itself adds "
        "(its delta manifests' ADD entries less the files it deletes again), which needs `snapshot`"
    ),
]
"""Named after Paimon's ScanMode (ALL, DELTA): what a streaming reader asks of each new snapshot."""
PartitionFilter = Annotated[
    str | None,
    Query(
        max_length=JSON_QUERY_MAX,
        pattern=PRINTABLE_PATTERN,
        description='JSON object, e.g. {"dt": "2024-01-01"}',
    ),
]
IdempotencyKeyQuery = Annotated[
    str | None, Query(alias="idempotencyKey", max_length=200, pattern=PRINTABLE_PATTERN)
]
IdempotencyKeyHeader = Annotated[str | None, Header(max_length=200, pattern=PRINTABLE_PATTERN)]
PageToken = Annotated[
    str | None,
    Query(max_length=600, pattern=PRINTABLE_PATTERN, description="nextPageToken of the previous page"),
]
DatabaseFilter = Annotated[str | None, Query(pattern=NAME_PATTERN, description="only this database")]
NamePrefix = Annotated[
    str | None,
    Query(max_length=128, pattern=PRINTABLE_PATTERN, description="only tables whose name starts with this"),
]
TableFilter = Annotated[
    str | None,
    Query(max_length=TABLE_ID_MAX, pattern=PRINTABLE_PATTERN, description="only this table id"),
]
"""GET /commits?table= in api/ops.py."""
WindowMinutes = Annotated[int, Query(ge=1, le=1440, description="the window of throughput and latency")]
MAX_EVENT_WAIT_SECONDS = 60
"""The longest a GET /events may wait for an event (long poll); past it a proxy would cut the request."""
EventCursor = Annotated[
    int | None,
    Query(
        ge=0,
        le=INT64_MAX,
        description="the cursor of the last event seen (0: from the first); absent: from the oldest kept",
    ),
]
EventWait = Annotated[
    float,
    Query(
        ge=0,
        le=MAX_EVENT_WAIT_SECONDS,
        description="long poll: seconds to wait for an event after the cursor when there is none yet",
    ),
]
LastEventId = Annotated[
    int | None,
    Header(
        alias="Last-Event-ID",
        ge=0,
        le=INT64_MAX,
        description="the cursor of the last event received: what a reconnecting EventSource sends",
    ),
]
FeedConsumerName = Annotated[
    str | None,
    Query(
        pattern=NAME_PATTERN,
        description="a name for this consumer: the service records the last cursor it delivered to it "
        "(GET /ops/consumers shows its lag)",
    ),
]
HistoryUserPrefix = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=200,
        pattern=PRINTABLE_PATTERN,
        description="only commits whose commitUser starts with this",
    ),
]
HistoryIdentifier = Annotated[
    int | None, Query(ge=INT64_MIN, le=INT64_MAX, description="only commits of this commitIdentifier")
]
HistoryOutcome = Annotated[
    Literal["committed", "rejected", "done", "overwritten"] | None,
    Query(description="only entries of this outcome (done: maintenance actions)"),
]
