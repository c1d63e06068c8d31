"""What every wire model shares: the camelCase, frozen base classes and the value limits."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1

NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_\-]{0,127}$"
FILE_NAME_PATTERN = r"^[A-Za-z0-9_\-][A-Za-z0-9_\-.]{0,254}$"
REF_NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}$"
"""Tag names and consumer ids: they become file names (tag-<name>, consumer-<id>)."""


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class _Request(_Model):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid")
