"""Request bodies the routes declare beyond the wire models: the empty body of an action that takes no
parameters, and the bounds of option keys and values a PATCH of options is refused for at the edge.

Every body forbids keys it does not know (422 naming the key), as the wire models do: a misspelt
parameter must not be silently ignored by an action that then runs without it.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Body
from pydantic import BaseModel, ConfigDict, Field

from coordinator_client.models import SetOptionsRequest
from coordinator_client.models._schema_changes import OptionKey, OptionValue


class NoParameters(BaseModel):
    """The body of an action without parameters: absent, or an empty JSON object."""

    model_config = ConfigDict(extra="forbid", frozen=True)


NoBody = Annotated[
    NoParameters | None,
    Body(description="none: the action takes no parameters, and refuses any (422 naming the first)"),
]
"""A route parameter (default None) for POSTs that take no body, so that `{"dryRun": true}` sent to
one is refused, not ignored."""


class SetOptionsBody(SetOptionsRequest):
    """SetOptionsRequest with the bounds of Paimon's setOption/removeOption keys and values (non-empty
    keys of at most 256 characters, no NUL), so a key no schema change can carry is a 422 naming it
    before the table is held, not an error of the schema change built from it."""

    set: dict[OptionKey, OptionValue] = Field(default_factory=dict)
    remove: list[OptionKey] = Field(default_factory=list)
