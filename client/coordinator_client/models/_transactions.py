"""Multi-table transactions: several tables' changes committed all or nothing, under one commitUser and
identifier (`POST /transactions`)."""

from __future__ import annotations

from pydantic import Field

from coordinator_client.models._base import (
    COMMIT_USER_PATTERN,
    INT64_MAX,
    INT64_MIN,
    _Model,
    _Request,
)
from coordinator_client.models._commits import TableSnapshots, _TableChanges
from paimon_format.snapshot import BATCH_IDENTIFIER


class TransactionTableChange(_TableChanges):
    """One table's part: the fields of a single commit (CommitRequest), with the same meaning."""

    table: str = Field(min_length=1, max_length=256, description="the table id, database.name")


class TransactionRequest(_Request):
    """Every table gets its snapshot(s), or none does. A resend of the same commitUser and identifier
    answers what was recorded."""

    commit_user: str = Field(min_length=1, max_length=200, pattern=COMMIT_USER_PATTERN)
    identifier: int = Field(default=BATCH_IDENTIFIER, ge=INT64_MIN, le=INT64_MAX)
    tables: list[TransactionTableChange] = Field(min_length=1)


class TransactionResponse(_Model):
    tables: list[TableSnapshots]
    deduplicated: bool = False
    timings: dict[str, float] = Field(default_factory=dict, description="milliseconds per phase")
