"""Rendering a scan plan as a stream: the JSON document old callers parse, or JSON lines.

Both are produced chunk by chunk while the manifests are read (see usecases/scan_plan.py), so the
service never holds the answer. A chunk carries many files: each chunk costs a hop to a worker thread.
A failure after the first chunk can no longer change the status: the JSON document is then cut off (the
connection is aborted, so no client mistakes a prefix for the plan), and JSON lines end with a ScanPlanEnd
line carrying the error.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from coordinator.errors import CoordinatorError
from coordinator.usecases.scan_plan import ScanPlan
from coordinator_client.models import ErrorResponse, ScanPlanEnd, ScanPlanHeader

log = logging.getLogger(__name__)

JSON_LINES = "application/x-ndjson"
CHUNK_FILES = 500
"""Files per chunk written to the connection."""


def wants_json_lines(accept: str | None) -> bool:
    """Whether the Accept header asks for JSON lines (anything else gets the JSON document)."""
    if not accept:
        return False
    return any(part.split(";")[0].strip().lower() == JSON_LINES for part in accept.split(","))


def json_document(plan: ScanPlan) -> Iterator[bytes]:
    """`{"snapshotId": N, "files": [...]}`, as FileListResponse, in chunks."""
    yield b'{"snapshotId":' + _json_int(plan.snapshot_id) + b',"files":['
    first = True
    chunk: list[bytes] = []
    for f in plan.files():
        chunk.append(f.model_dump_json(by_alias=True).encode())
        if len(chunk) >= CHUNK_FILES:
            yield (b"" if first else b",") + b",".join(chunk)
            first, chunk = False, []
    if chunk:
        yield (b"" if first else b",") + b",".join(chunk)
    yield b"]}"


def json_lines(plan: ScanPlan) -> Iterator[bytes]:
    """A ScanPlanHeader line, a LiveFileModel line per file, a ScanPlanEnd line."""
    yield ScanPlanHeader(snapshot_id=plan.snapshot_id).model_dump_json(by_alias=True).encode() + b"\n"
    count = 0
    chunk: list[bytes] = []
    try:
        for f in plan.files():
            chunk.append(f.model_dump_json(by_alias=True).encode() + b"\n")
            count += 1
            if len(chunk) >= CHUNK_FILES:
                yield b"".join(chunk)
                chunk = []
    except Exception as exc:
        log.exception("scan plan of %s failed after it began", plan.table.id)
        sent = count - len(chunk)
        end = _failure(exc, sent)
        yield end.model_dump_json(by_alias=True, exclude_none=True).encode() + b"\n"
        return
    yield b"".join(chunk)
    yield ScanPlanEnd(file_count=count).model_dump_json(by_alias=True, exclude_none=True).encode() + b"\n"


def _failure(exc: Exception, sent: int) -> ScanPlanEnd:
    if isinstance(exc, CoordinatorError):
        return ScanPlanEnd(file_count=sent, error=exc.to_response(), status=exc.status_code)
    message = f"reading the scan plan failed: {type(exc).__name__}: {exc}"
    return ScanPlanEnd(file_count=sent, error=ErrorResponse(code="INTERNAL", message=message), status=500)


def _json_int(value: int | None) -> bytes:
    return b"null" if value is None else str(value).encode()
