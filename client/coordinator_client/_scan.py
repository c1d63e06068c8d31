"""Reading a scan plan streamed as JSON lines (`GET /tables/{id}/files`, `Accept: application/x-ndjson`).

The stream is a ScanPlanHeader line, one LiveFileModel line per live file, and a ScanPlanEnd line. Every
line but the first and the last is a file, so the parser holds one line back: when the stream ends, the
line held back must be the ScanPlanEnd, whose count must match. A stream without it was cut off
(StreamCutOff); one whose end carries an error raises that error as an ApiError. `ScanLines` is the
I/O-free parser both clients share; `ScanPlanStream` and `AsyncScanPlanStream` feed it from httpx.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from types import TracebackType
from typing import Literal

import httpx
from pydantic import ValidationError

from coordinator_client.errors import StreamCutOff, TransportError, reported_error
from coordinator_client.models import LiveFileModel, ScanPlanEnd, ScanPlanHeader

JSON_LINES = "application/x-ndjson"
ScanScope = Literal["all", "delta"]
"""all: the live files at a snapshot; delta: only the files that snapshot adds (Paimon's ScanMode)."""


class ScanLines:
    """The parser of one streamed scan plan: the header line first, then every further line in order."""

    def __init__(self, header: str | None) -> None:
        if header is None:
            raise StreamCutOff("the scan plan ended before its first line")
        try:
            self.snapshot_id = ScanPlanHeader.model_validate_json(header).snapshot_id
        except ValidationError as e:
            raise StreamCutOff(f"the scan plan's first line is not a ScanPlanHeader: {e}") from None
        self.count = 0
        self._held: str | None = None

    def push(self, line: str) -> LiveFileModel | None:
        """The file of the line held back, if any; `line` is held back in its place."""
        if not line:
            return None
        held, self._held = self._held, line
        if held is None:
            return None
        self.count += 1
        return LiveFileModel.model_validate_json(held)

    def finish(self) -> None:
        """Check the last line.

        Raises:
            StreamCutOff: no ScanPlanEnd, or its count differs from the files read.
            ApiError: the service failed after the stream had begun (the subclass of its status).
        """
        if self._held is None:
            raise StreamCutOff(f"the scan plan ended after {self.count} files without its last line")
        try:
            end = ScanPlanEnd.model_validate_json(self._held)
        except ValidationError:
            raise StreamCutOff(
                f"the scan plan ended after {self.count + 1} files without its last line"
            ) from None
        if end.error is not None:
            raise reported_error(end.status or 500, end.error)
        if end.file_count != self.count:
            raise StreamCutOff(f"the scan plan announced {end.file_count} files, {self.count} came")


class ScanPlanStream:
    """The live files of one snapshot as they arrive; iterate once, then it is closed.

    `snapshot_id` is the snapshot planned (None when the table has none yet): pass it as `snapshot` to
    read the same plan again. Use as a context manager (or call close()) to release the connection
    when not iterating to the end. Iterating raises StreamCutOff, an ApiError or a TransportError when
    the plan does not arrive whole.
    """

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self._lines = response.iter_lines()
        try:
            self._parser = ScanLines(self._next())
        except BaseException:
            response.close()
            raise
        self.snapshot_id = self._parser.snapshot_id

    def _next(self) -> str | None:
        try:
            return next(self._lines, None)
        except httpx.TransportError as error:
            raise _wrap(error, self._response)  # noqa: B904 (its __cause__ is the httpx error)

    def __iter__(self) -> Iterator[LiveFileModel]:
        try:
            while (line := self._next()) is not None:
                file = self._parser.push(line)
                if file is not None:
                    yield file
            self._parser.finish()
        finally:
            self.close()

    def close(self) -> None:
        self._response.close()

    def __enter__(self) -> ScanPlanStream:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncScanPlanStream:
    """The asyncio/trio twin of ScanPlanStream: `await AsyncScanPlanStream.open(response)`, `async for`."""

    def __init__(self, response: httpx.Response, lines: AsyncIterator[str], parser: ScanLines) -> None:
        self._response = response
        self._lines = lines
        self._parser = parser
        self.snapshot_id = parser.snapshot_id

    @classmethod
    async def open(cls, response: httpx.Response) -> AsyncScanPlanStream:
        lines = response.aiter_lines()
        try:
            parser = ScanLines(await _anext(lines, response))
        except BaseException:
            await response.aclose()
            raise
        return cls(response, lines, parser)

    async def __aiter__(self) -> AsyncIterator[LiveFileModel]:
        try:
            while (line := await _anext(self._lines, self._response)) is not None:
                file = self._parser.push(line)
                if file is not None:
                    yield file
            self._parser.finish()
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        await self._response.aclose()

    async def __aenter__(self) -> AsyncScanPlanStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


async def _anext(lines: AsyncIterator[str], response: httpx.Response) -> str | None:
    try:
        return await lines.__anext__()
    except StopAsyncIteration:
        return None
    except httpx.TransportError as error:
        raise _wrap(error, response)  # noqa: B904 (its __cause__ is the httpx error)


def _wrap(error: httpx.TransportError, response: httpx.Response) -> TransportError:
    return TransportError.wrap(error, method=response.request.method, url=str(response.request.url))
