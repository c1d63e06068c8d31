"""What every wire model shares: the camelCase, frozen base classes and the value limits."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
INT32_MAX = 2**31 - 1

NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_\-]{0,127}$"
FILE_NAME_PATTERN = r"^[A-Za-z0-9_\-][A-Za-z0-9_\-.]{0,254}$"
REF_NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}$"
"""Tag names and consumer ids: they become file names (tag-<name>, consumer-<id>)."""
PRINTABLE_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*$"
"""Free text that reaches the database: no control characters (PostgreSQL's text refuses NUL)."""
COMMIT_USER_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]+$"
NO_NUL_PATTERN = r"^[^\x00]*$"
"""Text of a request body: PostgreSQL stores no NUL in text or JSONB, and no path holds one."""

Text = Annotated[str, Field(pattern=NO_NUL_PATTERN)]
Int64 = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]
Count = Annotated[int, Field(ge=0, le=INT64_MAX)]
"""Sizes, row counts and ids of a request: Paimon writes them as Java longs, the database as BIGINT."""
SnapshotId = Annotated[int, Field(ge=1, le=INT64_MAX)]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class _Request(_Model):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid")
