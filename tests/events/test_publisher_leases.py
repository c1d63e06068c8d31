"""The publishers' lease and cursor (db/repositories/publishers.py) on SQLite and PostgreSQL: one holder
at a time, taken over only once expired (with a new epoch), and a cursor that only the current holder
moves, only forward."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine

from coordinator.db.repositories import publishers as repo
from coordinator.db.repositories.publishers import PublisherLeases
from coordinator.settings import Settings


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    made = create_engine(database_url)
    yield made
    made.dispose()


def test_one_holder_then_a_takeover_after_expiry_fences_the_old_one(engine: Engine) -> None:
    leases = PublisherLeases(engine, lease_seconds=0.5)
    leases.register("nats", "nats", "nats://a")
    leases.register("nats", "nats", "nats://b")  # a second replica, or a restart: one row, target updated
    first = leases.take("nats", "replica-a")
    assert first is not None
    assert leases.take("nats", "replica-b") is None
    assert leases.renew(first)
    with engine.begin() as conn:
        assert repo.advance(conn, first, 10, 10)

    time.sleep(0.7)
    second = leases.take("nats", "replica-b")
    assert second is not None
    assert second.epoch == first.epoch + 1
    assert not leases.renew(first)
    with engine.begin() as conn:
        assert not repo.advance(conn, first, 20, 10)  # the old holder moves nothing any more
        assert not repo.advance(conn, second, 5, 1)  # nor does anyone move it back
        assert repo.advance(conn, second, 12, 2)
        (row,) = repo.publishers(conn)
    assert (row.cursor, row.delivered, row.target, row.owner) == (12, 12, "nats://b", "replica-b")


def test_webhook_settings_name_each_hook_once() -> None:
    hook = {"name": "audit", "url": "http://127.0.0.1:9/hook", "secret": "s"}
    with pytest.raises(ValueError, match="events_webhooks"):
        Settings(events_webhooks=[hook, hook])
    with pytest.raises(ValueError, match="url"):
        Settings(events_webhooks=[{**hook, "url": "ftp://x"}])
    with pytest.raises(ValueError, match="events_nats_url"):
        Settings(events_nats_url="http://127.0.0.1:4222")
    assert "s" not in repr(Settings(events_webhooks=[hook]).events_webhooks[0].secret)
