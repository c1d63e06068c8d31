"""The body of POST /tables/{id}/commits, read from its bytes: JSON, validated in one pass.

FastAPI would parse a JSON body into Python objects and then validate those (json.loads, then pydantic's
validate_python): for a commit of 10,000 messages that is twice the work of pydantic's own parser, which
validates while it reads the bytes. So the route takes the raw body and this module validates it once;
a defect is the same 422 naming the field that FastAPI's validation gives (api/errors.py).
"""

from __future__ import annotations

from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from coordinator_client.models import CommitRequest

JSON = "application/json"


def read_commit_request(body: bytes) -> CommitRequest:
    """The request a JSON body carries.

    Raises:
        RequestValidationError: the body is not JSON, or not a valid CommitRequest (the first defect
            names its field, as for any other route's body).
    """
    try:
        return CommitRequest.model_validate_json(body)
    except ValidationError as invalid:
        raise RequestValidationError(_in_body(invalid)) from None


def _in_body(invalid: ValidationError) -> list[dict[str, Any]]:
    # FastAPI's own body errors are located under "body"; the error handler strips it again.
    return [{**e, "loc": ("body", *e["loc"])} for e in invalid.errors(include_url=False)]


def request_body_openapi() -> dict[str, Any]:
    """The requestBody of the route's OpenAPI operation: FastAPI documents only bodies it parses itself.
    The schema it names is added to the document by `with_commit_request`."""
    return {
        "requestBody": {
            "required": True,
            "content": {JSON: {"schema": {"$ref": f"{_COMPONENTS}CommitRequest"}}},
        }
    }


def with_commit_request(document: dict[str, Any]) -> dict[str, Any]:
    """`document` with CommitRequest and the models it names under components/schemas, where clients
    generated from it find them by name."""
    schema = CommitRequest.model_json_schema(ref_template=_COMPONENTS + "{model}")
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(schema.pop("$defs", {}))
    schemas["CommitRequest"] = schema
    document["components"]["schemas"] = dict(sorted(schemas.items()))
    return document


_COMPONENTS = "#/components/schemas/"
