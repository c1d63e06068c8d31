"""Request bodies the routes declare beyond the wire models: the empty body of an action that takes no
parameters, and the bounds of option keys and values a PATCH of options is refused for at the edge.

Every body forbids keys it does not know (422 naming the key), as the wire models do: a misspelt
parameter must not be silently ignored by an action that then runs without it.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Body
from pydantic import BaseModel, ConfigDict, Field

from coordinator_client.models import SetOptionsRequest as WireSetOptions
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


# Named as the wire model it narrows, so the OpenAPI document keeps the name clients know.
class SetOptionsRequest(WireSetOptions):
    """PATCH /tables/{id}/options: options to set and option keys to remove (a new schema version).
    Keys are Paimon's option keys (1 to 256 characters, no NUL), values at most 65,536 characters: a key
    no schema change can carry is refused here, naming it, before the table is held."""

    set: dict[OptionKey, OptionValue] = Field(default_factory=dict)
    remove: list[OptionKey] = Field(default_factory=list)
