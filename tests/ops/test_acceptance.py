"""The on-call story end to end, on SQLite and PostgreSQL, with access control on.

A second coordinator instance on the same database takes a table's lock for a commit and stalls before
its commit point (a GC pause, a frozen VM). Four writers commit to that table through a real server and
queue behind the lock. The ops API and the dashboard (headless Chromium) show the lock with its owner,
epoch and expiry, and the four waiters. An admin force-releases it: the writers go on, and the stalled
holder's commit is rejected without a trace on storage, in the history or through pypaimon.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, expect
from prometheus_client.parser import text_string_to_metric_families

from coordinator.commit.commit_point import commit_each
from coordinator.errors import CommitConflict
from coordinator.services import Services
from coordinator.settings import Settings
from coordinator_client import CoordinatorClient, Forbidden
from coordinator_client.models import CommitRequest, LockModel
from tests.support.commits import append_commit
from tests.support.paimon_files import PaimonTable, pypaimon_rows
from tests.support.pause import PausedCall
from tests.support.served import LiveServer
from tests.support.waiting import wait_for

WRITERS = 4
COMMITS_EACH = 3
LATE = "late-holder"


def _commit(table: PaimonTable, user: str, identifier: int, ids: list[int]) -> dict[str, Any]:
    return append_commit(table, [{"id": i, "writer": user} for i in ids], user=user, identifier=identifier)


@pytest.mark.timeout(180)
def test_a_stuck_holder_is_seen_released_and_fenced(
    settings: Settings, services: Services, browser: Browser, warehouse: Path, tmp_path: Path
) -> None:
    secured = settings.model_copy(update={"require_tokens": True})
    admin_token = services.tokens.create("on-call-admin", "admin").token
    reader_token = services.tokens.create("dashboard", "reader").token
    writer_token = services.tokens.create("etl", "writer", database="shop").token
    # `services` is the second coordinator instance: same database, same warehouse, own process state.
    with (
        LiveServer(secured) as server,
        CoordinatorClient(server.url, token=admin_token, timeout=60) as admin,
        CoordinatorClient(server.url, token=reader_token, timeout=60) as reader,
    ):
        created = admin.create_table(
            {
                "database": "shop",
                "name": "orders",
                "fields": [{"name": "id", "type": "BIGINT"}, {"name": "writer", "type": "STRING"}],
            }
        )
        table = PaimonTable(created.model_dump(mode="json", by_alias=True))
        lock_id = services.tables.get(table.id).lock_id
        # The second instance takes the lock, writes its manifests and stalls before its commit point.
        late_commit = CommitRequest.model_validate(_commit(table, LATE, 0, [999]))
        stalled = PausedCall(lambda: services.committer.commit(table.id, late_commit), at=commit_each).start()
        [late] = services.locks.held()

        answers: dict[str, list[int]] = {}
        failures: list[BaseException] = []

        def writer(n: int) -> None:
            user = f"writer-{n}"
            try:
                with CoordinatorClient(server.url, token=writer_token, timeout=60) as own:
                    answers[user] = [
                        own.commit(table.id, _commit(table, user, k, [n * 100 + k])).snapshots[-1].id
                        for k in range(COMMITS_EACH)
                    ]
            except BaseException as error:  # reported below; a thread's exception is otherwise lost
                failures.append(error)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
        for t in threads:
            t.start()

        # The ops API: the held lock with its owner, epoch and expiry, and four commits waiting for it.
        def held_with_waiters() -> LockModel | None:
            listing = reader.locks()
            lock = next((lock for lock in listing.locks if lock.lock_id == lock_id), None)
            return lock if lock is not None and len(lock.waiters) == WRITERS else None

        lock = wait_for(held_with_waiters, "four waiters behind the held lock")
        now = reader.locks().now
        assert (lock.owner, lock.epoch, lock.table_id) == (late.owner, late.epoch, table.id)
        assert lock.acquired_at <= now < lock.expires_at
        assert lock.expires_at - lock.acquired_at == pytest.approx(settings.lock_lease_seconds, abs=0.01)
        assert sorted(w.commit_user for w in lock.waiters) == [f"writer-{n}" for n in range(WRITERS)]
        in_flight = reader.recent_commits().in_flight
        assert sorted((c.commit_user, c.phase) for c in in_flight) == [
            (f"writer-{n}", "lockWait") for n in range(WRITERS)
        ]
        assert answers == {}  # nobody got past the lock

        # The dashboard shows the same, to an on-call engineer with a reader token.
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{server.url}/dashboard")
        page.get_by_test_id("auth-token").fill(reader_token)
        page.get_by_role("button", name="Use token").click()
        row = page.locator(f'[data-testid="lock-row"][data-lock-id="{lock_id}"]')
        expect(row.get_by_test_id("lock-owner")).to_have_text(late.owner, timeout=15_000)
        expect(row.get_by_test_id("lock-epoch")).to_have_text(str(late.epoch))
        waiters = page.locator(f'[data-testid="lock-waiter"][data-lock-id="{lock_id}"]')
        expect(waiters).to_have_count(WRITERS)
        page.screenshot(path=str(tmp_path / "stuck-lock.png"), full_page=True)

        # A reader may not release it; an admin may, and it is audited.
        with pytest.raises(Forbidden):
            reader.release_lock(lock_id)
        released = admin.release_lock(lock_id)
        assert (released.released, released.owner, released.epoch) == (True, late.owner, late.epoch)
        [entry] = admin.audit().entries
        assert (entry.actor, entry.action, entry.target) == ("on-call-admin", "force-release-lock", lock_id)
        assert entry.details == {"released": {"owner": late.owner, "epoch": late.epoch}}

        for t in threads:
            t.join(timeout=60)
        assert failures == []
        snapshot_ids = sorted(i for ids in answers.values() for i in ids)
        assert snapshot_ids == list(range(1, WRITERS * COMMITS_EACH + 1))
        expect(row).to_have_count(0, timeout=15_000)
        table_row = page.locator(f'[data-testid="table-row"][data-table-id="{table.id}"]')
        expect(table_row.get_by_test_id("table-snapshot")).to_have_text(
            str(WRITERS * COMMITS_EACH), timeout=15_000
        )

        # The stalled holder wakes up and tries to commit: fenced, and nothing of it is visible.
        with pytest.raises(CommitConflict) as fenced:
            stalled.resume()
        assert fenced.value.conflict.type == "LOCK_LOST"
        # The history records the attempt as rejected, for the on-call engineer to see why.
        history = reader.recent_commits(limit=100).recent
        assert [(c.outcome, c.conflict and c.conflict.type) for c in history if c.commit_user == LATE] == [
            ("rejected", "LOCK_LOST")
        ]
        assert {s.commit_user for s in reader.list_snapshots(table.id, limit=100).snapshots} == {
            f"writer-{n}" for n in range(WRITERS)
        }
        rows = pypaimon_rows(warehouse, table.id)
        assert len(rows) == WRITERS * COMMITS_EACH
        assert all(r["writer"] != LATE for r in rows)
        snapshots = {p.name for p in (table.path / "snapshot").iterdir()}
        assert f"snapshot-{WRITERS * COMMITS_EACH + 1}" not in snapshots
        # Every manifest on storage belongs to a committed snapshot (the late holder's were removed).
        referenced = set(admin.clean_orphans(table.id, older_than_seconds=0, dry_run=True).files)
        assert not any("manifest" in f for f in referenced)

        samples = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(reader.metrics())
            for s in family.samples
        }
        committed = samples[("coordinator_commits_total", (("kind", "APPEND"), ("outcome", "committed")))]
        assert committed == WRITERS * COMMITS_EACH
        assert samples[("coordinator_lock_forced_releases_total", ())] == 1
