"""The on-call dashboard: GET /ops/overview against commits made over HTTP, and the page in Chromium.

The overview is checked on SQLite and PostgreSQL against what the test committed and against GET
/tables/{id}/files; the page is driven in headless Chromium (Debian's /usr/bin/chromium) over a real
uvicorn server, with a table lock held by a second Services instance on the same database.
"""

from __future__ import annotations

import itertools
import math
import re
import struct
import threading
import time
import uuid
import zlib
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from playwright.sync_api import Browser, Page, expect

from coordinator.db import repositories as repo
from coordinator.locks.renewal import LeaseKeeper
from coordinator.services import Services
from coordinator.settings import Settings, WebhookTarget
from coordinator_client import Conflict, CoordinatorClient
from coordinator_client.models import CommitQueueModel, OverviewResponse
from tests.support.backpressure import Jam
from tests.support.commits import BATCH, append_commit, post_commit
from tests.support.paimon_files import PaimonTable, create_table
from tests.support.served import LiveServer, free_port
from tests.support.webhook_receiver import WebhookReceiver

DT = "2024-01-01"
HOLDER = "ops-test-holder"
UPDATED = re.compile(r"^updated \d\d:\d\d:\d\d$")


def _table(http: httpx.Client, name: str) -> PaimonTable:
    return create_table(http, "db", name, {"dt": "STRING", "id": "BIGINT"}, partitionKeys=["dt"])


def _commit(table: PaimonTable, rows: int, **extra: Any) -> dict[str, Any]:
    """A batch commit of one new data file of `rows` rows."""
    data = [{"dt": DT, "id": i} for i in range(rows)]
    return append_commit(table, data, user=f"writer-{uuid.uuid4().hex[:8]}", **extra)


def _overview(http: httpx.Client, minutes: int) -> OverviewResponse:
    response = http.get("/ops/overview", params={"minutes": minutes})
    assert response.status_code == 200, response.text
    return OverviewResponse.model_validate(response.json())


# ---------------------------------------------------------------- GET /ops/overview


def test_overview_counts_what_was_committed(
    http: httpx.Client, client: CoordinatorClient, services: Services
) -> None:
    started = time.time()
    table = _table(http, "t")
    _table(http, "empty")
    assert [client.commit(table.id, _commit(table, n)).snapshots[-1].id for n in (3, 2, 4)] == [1, 2, 3]
    with pytest.raises(Conflict) as rejected:
        client.commit(table.id, _commit(table, 1, baseSnapshotId=1))
    client.create_tag(table.id, "release-1")  # maintenance: in the history, but not a commit attempt
    # A rejection recorded two hours ago: it counts for the table, not in a 30-minute window.
    old = repo.NewCommit(
        "old-writer", 7, "rejected", [], {}, {"type": "DUPLICATE_FILE", "message": "seen before"}, None,
        time.time() - 7200,
    )  # fmt: skip
    with services.engine.begin() as conn:
        repo.insert_commits(conn, table.id, [old])

    overview = _overview(http, 30)
    now = time.time()

    tables = {t.table_id: t for t in overview.tables}
    assert sorted(tables) == ["db.empty", "db.t"]
    t = tables["db.t"]
    assert (t.latest_snapshot_id, t.total_record_count) == (3, 9)
    assert (t.committed, t.rejected) == (3, 2)
    assert t.conflicts == {"BASE_SNAPSHOT_MOVED": 1, "DUPLICATE_FILE": 1}
    files = http.get(f"/tables/{table.id}/files").json()["files"]
    assert (t.file_count, t.file_bytes) == (len(files), sum(f["fileSize"] for f in files))
    assert t.file_count == 3
    assert t.last_commit_at is not None
    assert started <= t.last_commit_at <= now
    empty = tables["db.empty"]
    assert (empty.latest_snapshot_id, empty.total_record_count, empty.file_count, empty.file_bytes) == (
        0,
        0,
        0,
        0,
    )
    assert (empty.committed, empty.rejected, empty.conflicts, empty.last_commit_at) == (0, 0, {}, None)

    minutes = overview.commits_per_minute
    assert len(minutes) == overview.window_minutes == 30
    assert [b.minute - a.minute for a, b in itertools.pairwise(minutes)] == [60] * 29
    assert minutes[-1].minute == math.floor(overview.now / 60) * 60
    assert sum(m.committed for m in minutes) == 3
    assert sum(m.rejected for m in minutes) == 1  # the old rejection is outside the window

    total = overview.phase_latency_ms["total"]
    assert total.count == 3
    assert 0 < total.p50 <= total.p95 <= total.max
    assert {"lockWait", "commitPoint", "publish"} <= overview.phase_latency_ms.keys()

    latest, older = overview.conflicts
    assert (latest.table_id, latest.type, latest.identifier) == ("db.t", "BASE_SNAPSHOT_MOVED", BATCH)
    assert rejected.value.conflict is not None
    assert latest.message == rejected.value.conflict.message == "the table moved from snapshot 1 to 3"
    assert latest.commit_user.startswith("writer-")
    assert (older.type, older.message, older.commit_user) == ("DUPLICATE_FILE", "seen before", "old-writer")

    assert sum(m.rejected for m in _overview(http, 1440).commits_per_minute) == 2
    for bad in (0, 1441):
        assert http.get("/ops/overview", params={"minutes": bad}).status_code == 422


def test_overview_follows_new_snapshots_and_dropped_tables(
    http: httpx.Client, client: CoordinatorClient
) -> None:
    """Sizes move with each commit point: a new snapshot must show at once, a dropped table must go."""
    table = _table(http, "t")
    client.commit(table.id, _commit(table, 5))
    assert [
        (t.latest_snapshot_id, t.total_record_count, t.file_count) for t in _overview(http, 5).tables
    ] == [(1, 5, 1)]
    client.commit(table.id, _commit(table, 2))
    assert [
        (t.latest_snapshot_id, t.total_record_count, t.file_count) for t in _overview(http, 5).tables
    ] == [(2, 7, 2)]
    client.drop_table(table.id)
    assert _overview(http, 5).tables == []


JAM_LIMIT = 2.0


def _jammable(settings: Settings) -> Settings:
    """Admission refuses after 2 s of waiting; locks outlast a jam (tests/support/backpressure.py)."""
    update = {
        "commit_queue_max_wait_seconds": JAM_LIMIT,
        "lock_lease_seconds": 30,
        "lock_acquire_timeout_seconds": 120,
    }
    return settings.model_copy(update=update)


def _turned_away(http: httpx.Client, table: PaimonTable, count: int) -> None:
    """`count` commits to a jammed table, each refused with 429."""
    for _ in range(count):
        assert post_commit(http, table, _commit(table, 1)).status_code == 429


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_overview_shows_the_commit_queue_and_the_commits_refused_here(settings: Settings) -> None:
    with LiveServer(_jammable(settings)) as server, httpx.Client(base_url=server.url, timeout=120) as http:
        table = _table(http, "hot")
        assert _overview(http, 30).commit_queue == CommitQueueModel(
            waiting=0, wait_seconds=0, limit_seconds=JAM_LIMIT, refused={"table": 0, "process": 0},
            refused_last_minute=0,
        )  # fmt: skip
        with Jam(server, http, table, [_commit(table, 1) for _ in range(2)]):
            _turned_away(http, table, 3)
            queue = _overview(http, 30).commit_queue
            assert queue is not None
            assert queue.waiting == 2
            assert queue.wait_seconds > queue.limit_seconds == JAM_LIMIT
            assert queue.refused == {"table": 3, "process": 0}
            assert queue.refused_last_minute <= 3  # fewer if a minute began since
        queue = _overview(http, 30).commit_queue
        assert queue is not None
        assert (queue.waiting, queue.wait_seconds, queue.refused) == (0, 0, {"table": 3, "process": 0})


# ---------------------------------------------------------------- the page in Chromium


def _errors(page: Page) -> list[str]:
    """Uncaught exceptions and the page's own error logs (a failed fetch is shown in a panel instead)."""
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if "dashboard refresh failed" in m.text else None)
    return errors


@pytest.mark.timeout(120)
def test_dashboard_in_chromium(
    live_server: LiveServer,
    http: httpx.Client,
    client: CoordinatorClient,
    services: Services,
    browser: Browser,
    tmp_path: Path,
) -> None:
    table = _table(http, "t")
    locked = _table(http, "locked")
    for rows in (3, 4):
        client.commit(table.id, _commit(table, rows))
    with pytest.raises(Conflict):
        client.commit(table.id, _commit(table, 1, baseSnapshotId=1))

    # `services` is a second instance on the same database: its lock is what another replica would hold.
    lease = services.locks.acquire(services.tables.get(locked.id).lock_id, HOLDER, timeout_seconds=1)
    with LeaseKeeper(services.locks, lease, services.settings.lock_lease_seconds):
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = _errors(page)
        page.goto(f"{live_server.url}/dashboard")

        row = page.locator('[data-testid="table-row"][data-table-id="db.t"]')
        expect(row.get_by_test_id("table-snapshot")).to_have_text("2", timeout=15_000)
        expect(row.get_by_test_id("table-records")).to_have_text("7")
        expect(row.get_by_test_id("table-files")).to_have_text("2")
        expect(row.get_by_test_id("table-conflicts")).to_have_text("BASE_SNAPSHOT_MOVED (1)")
        empty = page.locator('[data-testid="table-row"][data-table-id="db.locked"]')
        expect(empty.get_by_test_id("table-bytes")).to_have_text("0 B")

        lock = page.locator(f'[data-testid="lock-row"][data-lock-id="{lease.lock_id}"]')
        expect(lock.get_by_test_id("lock-owner")).to_have_text(HOLDER, timeout=15_000)
        expect(lock.get_by_test_id("lock-epoch")).to_have_text(str(lease.epoch))

        conflict = page.get_by_test_id("conflict-row").first
        expect(conflict.get_by_test_id("conflict-type")).to_have_text("BASE_SNAPSHOT_MOVED")
        expect(conflict.get_by_test_id("conflict-message")).to_have_text(
            "the table moved from snapshot 1 to 2"
        )
        expect(page.get_by_test_id("throughput-total")).to_contain_text("2 committed")
        expect(page.get_by_test_id("throughput-total")).to_contain_text("1 rejected")
        expect(page.locator('[data-testid="latency-row"][data-phase="total"]')).to_be_visible()
        expect(page.get_by_test_id("updated")).to_have_text(UPDATED)

        # A commit that waits behind the held lock: in flight in lockWait, and a waiter of that lock.
        waiting = threading.Thread(target=_commit_in_thread, args=(live_server.url, locked))
        waiting.start()
        try:
            inflight = page.locator('[data-testid="inflight-row"][data-table-id="db.locked"]')
            expect(inflight.get_by_test_id("inflight-phase")).to_have_text("lockWait", timeout=15_000)
            expect(
                page.locator(f'[data-testid="lock-waiter"][data-lock-id="{lease.lock_id}"]')
            ).to_have_count(1)
            page.screenshot(path=str(tmp_path / "locked.png"), full_page=True)
        finally:
            services.locks.release(lease)
            waiting.join(timeout=30)
        assert not waiting.is_alive()

        # The page refreshes by itself: a commit made now shows up without a reload.
        client.commit(table.id, _commit(table, 5))
        expect(row.get_by_test_id("table-snapshot")).to_have_text("3", timeout=15_000)
        expect(row.get_by_test_id("table-records")).to_have_text("12")
        expect(page.get_by_test_id("lock-row")).to_have_count(0, timeout=15_000)
        expect(empty.get_by_test_id("table-snapshot")).to_have_text("1", timeout=15_000)
        expect(page.get_by_test_id("auth-form")).to_be_hidden()

        screenshot = tmp_path / "dashboard.png"
        page.screenshot(path=str(screenshot), full_page=True)
        chart = _decode_png(page.get_by_test_id("throughput-chart").screenshot())
        blank = browser.new_page(viewport={"width": 1280, "height": 900})
        blank_size = len(blank.screenshot(full_page=True))
    assert errors == []

    data = screenshot.read_bytes()
    width, height, _ = _decode_png(data)
    assert width == 1280
    assert height >= 900
    assert len(data) > 4 * blank_size, "the screenshot looks as empty as a blank page"
    # The chart's bars are drawn in the committed and rejected colours of style.css.
    assert _pixels_near(chart, (0x2F, 0x9E, 0x6B)) > 50
    assert _pixels_near(chart, (0xD9, 0x48, 0x0F)) > 20


@pytest.mark.timeout(120)
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_dashboard_shows_the_commits_refused_with_429(settings: Settings, browser: Browser) -> None:
    with LiveServer(_jammable(settings)) as server, httpx.Client(base_url=server.url, timeout=120) as http:
        table = _table(http, "hot")
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = _errors(page)
        page.goto(f"{server.url}/dashboard")
        queue = page.get_by_test_id("panel-queue")
        expect(queue.get_by_test_id("queue-refused")).to_have_text("0", timeout=15_000)
        with Jam(server, http, table, [_commit(table, 1) for _ in range(2)]):
            _turned_away(http, table, 3)
            expect(queue.get_by_test_id("queue-waiting")).to_have_text("2", timeout=15_000)
            expect(queue.get_by_test_id("queue-refused")).to_have_text("3", timeout=15_000)
            expect(queue.get_by_test_id("queue-refused")).to_have_class("num rejected")
            expect(queue.get_by_test_id("queue-refused-reasons")).to_have_text("table 3 · process 0")
            expect(queue.get_by_test_id("queue-wait")).to_contain_text(f"of {JAM_LIMIT:g} s")
        expect(queue.get_by_test_id("queue-waiting")).to_have_text("0", timeout=15_000)
        expect(queue.get_by_test_id("queue-refused")).to_have_text("3")
    assert errors == []


def _commit_in_thread(url: str, table: PaimonTable) -> None:
    with CoordinatorClient(url, timeout=60) as own:
        own.commit(table.id, _commit(table, 1))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_dashboard_asks_for_a_token_and_survives_failing_panels(
    settings: Settings, services: Services, browser: Browser, tmp_path: Path
) -> None:
    """With tokens required, the page asks for one, keeps it for the tab and sends it on every request;
    a panel whose data is forbidden or failing says so while the others go on."""
    reader = services.tokens.create("on-call", "reader").token
    admin = services.tokens.create("ops", "admin").token
    with LiveServer(settings.model_copy(update={"require_tokens": True})) as server:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {admin}"}) as http:
            _table(http, "t")
        page = browser.new_page()
        errors = _errors(page)
        page.goto(f"{server.url}/dashboard")

        form = page.get_by_test_id("auth-form")
        expect(form).to_be_visible(timeout=15_000)
        expect(page.get_by_test_id("auth-error")).to_have_text("")
        page.get_by_test_id("auth-token").fill("pcc_0000_wrong")
        page.get_by_role("button", name="Use token").click()
        expect(page.get_by_test_id("auth-error")).to_have_text("the service refused that token")
        expect(form).to_be_visible()

        page.get_by_test_id("auth-token").fill(reader)
        page.get_by_role("button", name="Use token").click()
        expect(form).to_be_hidden()
        row = page.locator('[data-testid="table-row"][data-table-id="db.t"]')
        expect(row.get_by_test_id("table-snapshot")).to_have_text("—", timeout=15_000)
        expect(page.get_by_test_id("panel-locks")).to_contain_text("no lock is held")
        # The feed's stream carries the token too (it is read with fetch, not EventSource, for that).
        expect(page.get_by_test_id("live")).to_have_text("live", timeout=15_000)
        assert page.evaluate("sessionStorage.getItem('coordinator.dashboard.token')") == reader
        page.reload()  # the token outlives a reload of the tab
        expect(row).to_be_visible(timeout=15_000)
        expect(form).to_be_hidden()

        # No token is refused a panel's data (one limited by a grant gets its grant's share), so the
        # browser's network layer plays a service that forbids one panel's data to this token.
        page.route(
            "**/locks", lambda route: route.fulfill(status=403, json={"code": "FORBIDDEN", "message": "no"})
        )
        expect(page.get_by_test_id("panel-locks")).to_contain_text("this token may not read", timeout=15_000)
        expect(page.get_by_test_id("forbidden")).to_be_visible()
        # A failing endpoint costs its panel only.
        page.route("**/commits?*", lambda route: route.fulfill(status=500, json={"code": "INTERNAL"}))
        expect(page.get_by_test_id("panel-inflight")).to_contain_text(
            "unavailable (HTTP 500)", timeout=15_000
        )
        expect(row).to_be_visible()
        page.screenshot(path=str(tmp_path / "forbidden.png"), full_page=True)
    assert errors == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_dashboard_pages_through_tables_and_finds_one_by_name(
    live_server: LiveServer, http: httpx.Client, client: CoordinatorClient, browser: Browser
) -> None:
    """The tables panel shows one page (50) of tables, the totals over all of them, goes to the next page
    and back, and finds tables by name prefix or database.name prefix."""
    for n in range(60):
        create_table(http, "fleet", f"t{n:03d}", {"id": "BIGINT"})
    orders = create_table(http, "sales", "orders", {"dt": "STRING", "id": "BIGINT"}, partitionKeys=["dt"])
    client.commit(orders.id, _commit(orders, 7))

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = _errors(page)
    page.goto(f"{live_server.url}/dashboard")
    rows = page.get_by_test_id("table-row")
    expect(rows).to_have_count(50, timeout=15_000)
    expect(rows.first).to_have_attribute("data-table-id", "fleet.t000")
    expect(page.get_by_test_id("tables-total")).to_contain_text("61 tables · 7 records · 1 files")
    expect(page.get_by_test_id("tables-page")).to_have_text("page 1, more follow")
    expect(page.get_by_test_id("tables-first")).to_be_disabled()

    page.get_by_test_id("tables-next").click()
    expect(rows).to_have_count(11, timeout=15_000)
    expect(rows.first).to_have_attribute("data-table-id", "fleet.t050")
    expect(rows.last).to_have_attribute("data-table-id", "sales.orders")
    expect(page.get_by_test_id("tables-page")).to_have_text("page 2")
    expect(page.get_by_test_id("tables-next")).to_be_disabled()
    page.get_by_test_id("tables-first").click()
    expect(rows).to_have_count(50, timeout=15_000)

    search = page.get_by_test_id("table-search")
    search.fill("sales.ord")
    found = page.locator('[data-testid="table-row"][data-table-id="sales.orders"]')
    expect(rows).to_have_count(1, timeout=15_000)
    expect(found.get_by_test_id("table-records")).to_have_text("7")
    expect(found.get_by_test_id("table-files")).to_have_text("1")
    search.fill("t05")
    expect(rows).to_have_count(10, timeout=15_000)
    expect(rows.first).to_have_attribute("data-table-id", "fleet.t050")
    search.fill("nope")
    expect(page.get_by_test_id("tables-empty")).to_have_text("no table matches nope", timeout=15_000)
    search.fill("")
    expect(rows).to_have_count(50, timeout=15_000)
    assert errors == []


# ---------------------------------------------------------------- the live feed, the table page, the ops page


def _by(table: PaimonTable, user: str, identifier: int, rows: int = 1, **extra: Any) -> dict[str, Any]:
    return append_commit(
        table, [{"dt": DT, "id": i} for i in range(rows)], user=user, identifier=identifier, **extra
    )


def _watch_requests(page: Page) -> list[tuple[str, dict[str, str]]]:
    """Every request the page makes: its URL and headers, in order."""
    seen: list[tuple[str, dict[str, str]]] = []
    page.on("request", lambda request: seen.append((request.url, request.headers)))
    return seen


def _paths(requests: list[tuple[str, dict[str, str]]], prefix: str) -> list[str]:
    paths = [url.split("://", 1)[1].split("/", 1)[1] for url, _ in requests]
    return ["/" + p for p in paths if ("/" + p).startswith(prefix)]


@pytest.mark.timeout(120)
def test_dashboard_shows_a_commit_as_it_happens_without_polling_the_commit_list(
    live_server: LiveServer, http: httpx.Client, client: CoordinatorClient, browser: Browser
) -> None:
    table = _table(http, "t")
    client.commit(table.id, _by(table, "before", 1))

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = _errors(page)
    requests = _watch_requests(page)
    page.goto(f"{live_server.url}/dashboard")
    expect(page.get_by_test_id("live")).to_have_text("live", timeout=15_000)
    rows = page.locator('[data-testid="live-row"][data-table-id="db.t"]')
    # The commit made before the page opened comes from the history, with its timings.
    expect(rows).to_have_count(1)
    expect(rows.first.get_by_test_id("live-user")).to_have_text("before")
    expect(rows.first.get_by_test_id("live-total")).to_have_text(re.compile(r"^[\d.]+ ms$"))

    opened = time.monotonic()
    client.commit(table.id, _by(table, "alice", 7, rows=3))
    newest = rows.first
    expect(newest.get_by_test_id("live-user")).to_have_text("alice", timeout=2_500)
    took = time.monotonic() - opened
    expect(newest.get_by_test_id("live-kind")).to_have_text("commit")
    expect(newest.get_by_test_id("live-identifier")).to_have_text("7")
    expect(newest.get_by_test_id("live-snapshots")).to_have_text("2")
    expect(newest).to_contain_text("1 partition, +1/-0 files, +3 rows")
    # The phase timings, which the event does not carry, come from the table's history shortly after.
    expect(newest.get_by_test_id("live-total")).to_have_text(re.compile(r"^[\d.]+ ms$"), timeout=5_000)
    assert "commitPoint" in (newest.get_by_test_id("live-total").get_attribute("title") or "")
    expect(rows).to_have_count(2)
    # The tables panel follows the event too, without waiting for its next read.
    table_row = page.locator('[data-testid="table-row"][data-table-id="db.t"]')
    expect(table_row.get_by_test_id("table-snapshot")).to_have_text("2", timeout=2_500)

    page.wait_for_timeout(7_000)  # more than two of the old 3-s polls
    assert took < 2.5
    assert len(_paths(requests, "/events/stream")) == 1, "the stream was opened more than once"
    assert _paths(requests, "/commits?limit=20") == ["/commits?limit=20"], "the commit list was polled"
    assert len(_paths(requests, "/tables/db.t/commits")) == 1, "timings read more than once for one commit"
    assert errors == []


class _PortServer(LiveServer):
    """A LiveServer on a given port, whose open streams do not hold its stop for ever (a restart)."""

    def __init__(self, settings: Settings, port: int) -> None:
        super().__init__(settings)
        config = uvicorn.Config(
            self.app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=1
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_dashboard_stream_resumes_after_the_server_restarts(settings: Settings, browser: Browser) -> None:
    port = free_port()
    with _PortServer(settings, port) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        table = _table(http, "t")
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = _errors(page)
        requests = _watch_requests(page)
        page.goto(f"{server.url}/dashboard")
        expect(page.get_by_test_id("live")).to_have_text("live", timeout=15_000)
        assert post_commit(http, table, _by(table, "first", 1)).status_code == 201
        rows = page.locator('[data-testid="live-row"][data-table-id="db.t"]')
        expect(rows).to_have_count(1, timeout=5_000)
        first_cursor = http.get("/events/head").json()["cursor"]
    expect(page.get_by_test_id("live")).to_have_text("reconnecting…", timeout=15_000)

    # While the page's server is down, another replica on the same database takes a commit.
    with LiveServer(settings) as other, httpx.Client(base_url=other.url, timeout=60) as http:
        assert post_commit(http, table, _by(table, "meanwhile", 2)).status_code == 201
    with _PortServer(settings, port):
        expect(page.get_by_test_id("live")).to_have_text("live", timeout=15_000)
        expect(rows).to_have_count(2, timeout=10_000)
        expect(rows.first.get_by_test_id("live-user")).to_have_text("meanwhile")
        expect(rows.last.get_by_test_id("live-user")).to_have_text("first")
        page.wait_for_timeout(1_000)
        expect(rows).to_have_count(2)  # nothing shown twice
    resumed = [h.get("last-event-id") for url, h in requests if "/events/stream" in url]
    assert len(resumed) >= 2
    assert resumed[-1] == str(first_cursor), resumed
    assert errors == []


@pytest.mark.timeout(120)
def test_table_page_shows_commits_timings_conflicts_lock_tags_and_searches_history(
    live_server: LiveServer,
    http: httpx.Client,
    client: CoordinatorClient,
    services: Services,
    browser: Browser,
) -> None:
    table = _table(http, "t")
    _table(http, "other")
    for user, ident in (("alice", 1), ("alice", 2), ("bob", 3)):
        client.commit(table.id, _by(table, user, ident))
    with pytest.raises(Conflict):
        client.commit(table.id, _by(table, "carol", 4, baseSnapshotId=1))
    client.create_tag(table.id, "release-1")
    consumer = http.put(f"/tables/{table.id}/consumers/reader-1", json={"nextSnapshotId": 2})
    assert consumer.status_code == 200, consumer.text

    lease = services.locks.acquire(services.tables.get(table.id).lock_id, HOLDER, timeout_seconds=1)
    with LeaseKeeper(services.locks, lease, services.settings.lock_lease_seconds):
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = _errors(page)
        requests = _watch_requests(page)
        page.goto(f"{live_server.url}/dashboard")
        # From the overview, the table's link opens its page.
        page.locator('[data-testid="table-row"][data-table-id="db.t"]').get_by_role("link").click(
            timeout=15_000
        )
        expect(page.get_by_test_id("view-table")).to_be_visible()
        expect(page.get_by_test_id("view-overview")).to_be_hidden()
        expect(page.get_by_test_id("table-title")).to_have_text("db.t")
        assert page.url.endswith("#/tables/db.t")

        history = page.get_by_test_id("history-row")
        committed = page.locator('[data-testid="history-row"][data-outcome="committed"]')
        expect(committed).to_have_count(3, timeout=15_000)
        expect(committed.get_by_test_id("history-user")).to_have_text(["bob", "alice", "alice"])
        expect(committed.get_by_test_id("history-snapshots")).to_have_text(["3", "2", "1"])
        for n in range(3):
            expect(committed.nth(n).get_by_test_id("history-total")).to_have_text(re.compile(r"^[\d.]+ ms$"))
            expect(committed.nth(n).get_by_test_id("history-phases")).to_contain_text("commitPoint")
        rejected = page.locator('[data-testid="history-row"][data-outcome="rejected"]')
        expect(rejected.get_by_test_id("history-user")).to_have_text("carol")
        expect(rejected.get_by_test_id("history-conflict")).to_have_text(
            "BASE_SNAPSHOT_MOVED: the table moved from snapshot 1 to 3"
        )
        expect(page.get_by_test_id("table-conflict-type")).to_have_text(["BASE_SNAPSHOT_MOVED"])
        expect(page.get_by_test_id("table-lock-owner")).to_have_text(HOLDER)
        expect(page.get_by_test_id("table-lock-epoch")).to_have_text(str(lease.epoch))
        expect(page.get_by_test_id("tag-name")).to_have_text(["release-1"])
        expect(page.get_by_test_id("tag-snapshot")).to_have_text(["3"])
        expect(page.get_by_test_id("table-consumer-next")).to_have_text(["2"])
        expect(page.get_by_test_id("snapshot-row")).to_have_count(3)
        expect(page.get_by_test_id("snapshot-user")).to_have_text(["bob", "alice", "alice"])
        expect(page.get_by_test_id("summary-snapshot")).to_have_text("3")

        # The search: by user, by identifier, by outcome, and together.
        total = history.count()
        assert total >= 5  # four commit attempts and the tag (and whatever else the table recorded)
        page.get_by_test_id("history-user-search").fill("ali")
        expect(history).to_have_count(2)
        expect(history.get_by_test_id("history-user")).to_have_text(["alice", "alice"])
        expect(page.get_by_test_id("history-count")).to_have_text("2 matching")
        # Searched by the service, so the search reaches past the page the table page holds.
        assert any("user_prefix=ali" in url for url in _paths(requests, "/tables/db.t/commits?"))
        page.get_by_test_id("history-identifier-search").fill("2")
        expect(history).to_have_count(1)
        expect(history.get_by_test_id("history-snapshots")).to_have_text("2")
        page.get_by_test_id("history-user-search").fill("")
        page.get_by_test_id("history-identifier-search").fill("")
        page.get_by_test_id("history-outcome-search").select_option("rejected")
        expect(history).to_have_count(1)
        expect(history.get_by_test_id("history-user")).to_have_text("carol")
        page.get_by_test_id("history-user-search").fill("alice")
        expect(page.get_by_test_id("history-empty")).to_have_text("nothing matches")
        page.get_by_test_id("history-outcome-search").select_option("")
        page.get_by_test_id("history-user-search").fill("")
        expect(history).to_have_count(total)
        expect(page.get_by_test_id("history-count")).to_have_text(f"{total} recorded")
        page.get_by_test_id("history-identifier-search").fill("x")
        expect(page.get_by_test_id("history-empty")).to_have_text("an identifier is a whole number")
        page.get_by_test_id("history-identifier-search").fill("")
        expect(history).to_have_count(total)
    # The lock released and a new commit: the page follows both without a reload.
    expect(page.get_by_test_id("table-unlocked")).to_be_visible(timeout=15_000)
    client.commit(table.id, _by(table, "dave", 5))
    expect(committed.first.get_by_test_id("history-user")).to_have_text("dave", timeout=5_000)
    expect(page.get_by_test_id("summary-snapshot")).to_have_text("4")
    # Another table's page starts clean.
    page.goto(f"{live_server.url}/dashboard#/tables/db.other")
    expect(page.get_by_test_id("table-title")).to_have_text("db.other")
    expect(page.get_by_test_id("history-row")).to_have_count(0, timeout=15_000)
    expect(page.get_by_test_id("panel-tags")).to_contain_text("no tags")
    assert errors == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_ops_page_shows_a_consumers_lag_falling_to_zero_and_the_publishers(
    live_server: LiveServer, http: httpx.Client, client: CoordinatorClient, browser: Browser
) -> None:
    table = _table(http, "t")
    for ident in (1, 2):
        client.commit(table.id, _by(table, "job", ident))
    first = http.get("/events", params={"consumer": "loader", "limit": 1})
    assert first.status_code == 200, first.text

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = _errors(page)
    page.goto(f"{live_server.url}/dashboard#/ops")
    expect(page.get_by_test_id("view-ops")).to_be_visible()
    loader = page.locator('[data-testid="feed-consumer-row"][data-name="loader"]')
    expect(loader.get_by_test_id("feed-consumer-lag")).to_have_text("2", timeout=15_000)
    expect(loader.get_by_test_id("feed-consumer-cursor")).to_have_text(str(first.json()["nextCursor"]))
    # This service has no publishers: GET /ops/publishers answers an empty list.
    assert http.get("/ops/publishers").json() == {"publishers": []}
    expect(page.get_by_test_id("no-publishers")).to_have_text("no publishers")

    rest = http.get("/events", params={"consumer": "loader", "after": first.json()["nextCursor"]})
    expect(loader.get_by_test_id("feed-consumer-lag")).to_have_text("0", timeout=5_000)
    expect(loader.get_by_test_id("feed-consumer-cursor")).to_have_text(str(rest.json()["nextCursor"]))
    client.commit(table.id, _by(table, "job", 3))
    expect(loader.get_by_test_id("feed-consumer-lag")).to_have_text("1", timeout=5_000)
    http.get("/events", params={"consumer": "loader", "after": rest.json()["nextCursor"]})
    expect(loader.get_by_test_id("feed-consumer-lag")).to_have_text("0", timeout=5_000)

    # The publishers panel, from the contract of GET /ops/publishers, played by the browser's network.
    contract = {
        "publishers": [
            {
                "name": "nats-main", "kind": "nats", "target": "nats://127.0.0.1:4222/commits", "cursor": 12,
                "lagEvents": 3, "lagSeconds": 4.5, "delivered": 12, "failures": 1,
                "lastError": "nats: timeout", "deadLetters": 0,
            },
            {
                "name": "audit-hook", "kind": "webhook", "target": "https://audit.example/hook", "cursor": 15,
                "lagEvents": 0, "lagSeconds": 0, "delivered": 15, "failures": 0, "lastError": None,
                "deadLetters": 2,
            },
        ]
    }  # fmt: skip
    page.route("**/ops/publishers", lambda route: route.fulfill(status=200, json=contract))
    nats = page.locator('[data-testid="publisher-row"][data-name="nats-main"]')
    expect(nats.get_by_test_id("publisher-kind")).to_have_text("nats", timeout=5_000)
    expect(nats.get_by_test_id("publisher-lag")).to_have_text("3")
    expect(nats.get_by_test_id("publisher-lag-seconds")).to_have_text("4.5 s")
    expect(nats.get_by_test_id("publisher-failures")).to_have_text("1")
    expect(nats.get_by_test_id("publisher-error")).to_have_text("nats: timeout")
    hook = page.locator('[data-testid="publisher-row"][data-name="audit-hook"]')
    expect(hook.get_by_test_id("publisher-dead-letters")).to_have_text("2")
    expect(hook.get_by_test_id("publisher-error")).to_have_text("")
    page.route("**/ops/publishers", lambda route: route.fulfill(status=200, json={"publishers": []}))
    expect(page.get_by_test_id("no-publishers")).to_have_text("no publishers", timeout=5_000)
    assert errors == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_ops_page_shows_a_real_webhook_publisher_catching_up(settings: Settings, browser: Browser) -> None:
    """GET /ops/publishers of a service with a webhook whose receiver fails its first three deliveries:
    the panel shows the failures, then the lag drained to 0."""
    with WebhookReceiver(failures=3) as receiver:
        hooked = settings.model_copy(
            update={
                "events_webhooks": [WebhookTarget(name="audit", url=receiver.url, secret="s3cret")],
                "events_webhook_max_attempts": 10,
                "events_publisher_backoff_seconds": 0.5,
                "events_publisher_max_backoff_seconds": 1.0,
            }
        )
        with LiveServer(hooked) as server, httpx.Client(base_url=server.url, timeout=60) as http:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors = _errors(page)
            page.goto(f"{server.url}/dashboard#/ops")
            hook = page.locator('[data-testid="publisher-row"][data-name="webhook-audit"]')
            expect(hook.get_by_test_id("publisher-kind")).to_have_text("webhook", timeout=15_000)
            expect(hook).to_contain_text(receiver.url)
            table = _table(http, "t")
            assert post_commit(http, table, _by(table, "job", 1)).status_code == 201
            expect(hook.get_by_test_id("publisher-failures")).to_have_text("3", timeout=20_000)
            expect(hook.get_by_test_id("publisher-lag")).to_have_text("0", timeout=20_000)
            expect(hook.get_by_test_id("publisher-delivered")).to_have_text("2", timeout=10_000)
            expect(hook.get_by_test_id("publisher-dead-letters")).to_have_text("0")
            expect(hook.get_by_test_id("publisher-error")).to_have_text("")
            state = http.get("/ops/publishers").json()["publishers"][0]
            assert (state["failures"], state["delivered"], state["lagEvents"]) == (3, 2, 0)
    assert errors == []


# ---------------------------------------------------------------- PNG


def _decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and rows of RGB(A) pixels of an 8-bit truecolour PNG, as Chromium writes them."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    width = height = channels = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert (depth, colour) in ((8, 2), (8, 6)), "not 8-bit RGB or RGBA"
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        line = _unfilter(raw[start], bytearray(raw[start + 1 : start + 1 + stride]), previous, channels)
        rows.append(bytes(line))
        previous = line
    return width, height, rows


def _unfilter(kind: int, line: bytearray, up: bytearray, bpp: int) -> bytearray:
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        corner = up[i - bpp] if i >= bpp else 0
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 2:
            line[i] = (line[i] + up[i]) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + (left + up[i]) // 2) & 0xFF
        elif kind == 4:
            p = left + up[i] - corner
            pa, pb, pc = abs(p - left), abs(p - up[i]), abs(p - corner)
            predictor = left if pa <= pb and pa <= pc else up[i] if pb <= pc else corner
            line[i] = (line[i] + predictor) & 0xFF
    return line


def _pixels_near(png: tuple[int, int, list[bytes]], rgb: tuple[int, int, int], tolerance: int = 8) -> int:
    width, _, rows = png
    channels = len(rows[0]) // width
    return sum(
        1
        for row in rows
        for x in range(width)
        if all(abs(row[x * channels + c] - rgb[c]) <= tolerance for c in range(3))
    )
