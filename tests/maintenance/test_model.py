"""A randomized model of table maintenance, checked through the real app on both databases.

Hypothesis drives appends, compactions, overwrites, file deletions, empty commits, retention changes,
expirations (explicit, and the one after every commit), tags, consumers and rollbacks on a partitioned
append table, and keeps its own model: the live files (with their rows) of every snapshot of the current
lineage, the retained range, the tags and the consumers.
Expiration is decided by an independent reading of Paimon's rule (ExpireSnapshotsImpl), not by the
service's code. After every step pypaimon, the independent reader, must see exactly the model's rows at
the latest snapshot, at every retained snapshot and at every tag, and the files on storage must be exactly
those some retained snapshot or tag references: data files as the model says, snapshot, tag and consumer
files, and the manifests the retained snapshot and tag files name (read back with fastavro). No file a
reader needs is gone and no file nobody needs is left behind; no commit is in flight between steps (every
one has returned), so nothing else may be on storage.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastavro
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from tests.support.paimon_files import PaimonTable, create_table, sorted_rows

DAYS = ("2024-01-01", "2024-01-02")
TAGS = ("t0", "t1", "t2")
CONSUMERS = ("c0", "c1")
FIELDS = {"dt": "STRING", "id": "BIGINT", "v": "STRING"}
SHORT, LONG = "1 ms", "1 h"
"""The two time-retained values: every snapshot but the newest is older than SHORT (each commit and
expiration waits a few milliseconds first), and none is older than LONG."""


@dataclass(frozen=True)
class ModelFile:
    """One data file as the model knows it: where it lies, what the commit said of it, what it holds."""

    path: str
    """Relative to the table folder."""
    day: str
    meta: dict[str, Any]
    """The DataFile JSON exactly as committed: compactBefore and deletedFiles repeat it."""
    rows: tuple[dict[str, Any], ...]


Files = dict[str, ModelFile]
"""The live files of one snapshot, by path."""


@dataclass(frozen=True)
class Retention:
    num_min: int
    num_max: int | None
    time_retained: str


RETENTIONS = st.builds(
    lambda num_min, num_max, time_retained: Retention(
        num_min, None if num_max is None else max(num_min, num_max), time_retained
    ),
    st.integers(1, 3),
    st.none() | st.integers(2, 6),
    st.sampled_from([LONG, LONG, SHORT]),
)
"""Retention options: num-retained.max, when set, is never below num-retained.min; mostly LONG, so that
snapshots pile up between the expirations that take many at once."""


def expected_earliest(earliest: int, latest: int, retention: Retention, consumers: list[int]) -> int:
    """The earliest snapshot after expiring everything Paimon's retention allows (batches repeat until
    nothing more goes, so expire.limit does not change the end state).

    The newest num-retained.min snapshots stay; a consumer keeps its next snapshot and later ones; a
    snapshot beyond num-retained.max goes regardless of its age, the others only once older than
    time-retained.
    """
    if latest - earliest + 1 <= retention.num_min:
        return earliest
    keep_from = latest - retention.num_min + 1
    if consumers:
        keep_from = min(keep_from, min(consumers))
    if retention.time_retained == LONG:
        beyond_max = latest - retention.num_max + 1 if retention.num_max is not None else earliest
        keep_from = min(keep_from, beyond_max)
    return max(keep_from, earliest)


def read_rows(warehouse: Path, table_id: str, options: dict[str, str]) -> list[dict[str, Any]]:
    """Every row pypaimon reads from the table with time-travel options (a snapshot id or a tag name)."""
    from pypaimon import CatalogFactory

    table = CatalogFactory.create({"warehouse": str(warehouse)}).get_table(table_id)
    if options:
        table = table.copy(options)
    builder = table.new_read_builder()
    arrow = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted_rows(arrow.to_pylist() if arrow is not None else [])


def rows_of(files: Files) -> list[dict[str, Any]]:
    return sorted_rows([row for f in files.values() for row in f.rows])


class MaintenanceMachine(RuleBasedStateMachine):
    """One fresh table per example, created with a retention that expires nothing, so that `history`
    builds its snapshots whole before it sets the example's retention."""

    def __init__(self, api: TestClient, warehouse: Path) -> None:
        super().__init__()
        self.api = api
        self.warehouse = warehouse
        self.retention = Retention(num_min=1, num_max=None, time_retained=LONG)
        self.table: PaimonTable = create_table(
            api,
            "maintenance",
            f"t_{uuid.uuid4().hex[:12]}",
            FIELDS,
            partitionKeys=["dt"],
            options={
                "snapshot.num-retained.min": "1",
                "snapshot.time-retained": LONG,
                "snapshot.expire.limit": "2",
            },
        )
        self.url = f"/tables/{self.table.id}"
        self.states: dict[int, Files] = {}
        """Live files of every snapshot of the current lineage, expired ones included (tags keep them)."""
        self.earliest = 1
        self.latest = 0
        """Retained: earliest..latest; latest 0 means no snapshot yet."""
        self.tags: dict[str, int] = {}
        self.consumers: dict[str, int] = {}
        self.next_row_id = 0

    # ------------------------------------------------------------ helpers

    @property
    def live(self) -> Files:
        return self.states.get(self.latest, {})

    def retained(self) -> range:
        return range(self.earliest, self.latest + 1)

    def write(self, day: str, size: int) -> ModelFile:
        rows = [{"dt": day, "id": self.next_row_id + i, "v": f"v{self.next_row_id + i}"} for i in range(size)]
        self.next_row_id += size
        return self.write_rows(day, rows)

    def write_rows(self, day: str, rows: list[dict[str, Any]]) -> ModelFile:
        meta = self.table.append_file(rows)
        path = f"{self.table.partition_dir({'dt': day})}/bucket-0/{meta['fileName']}"
        return ModelFile(path, day, meta, tuple(rows))

    def message(self, day: str, **files: list[ModelFile]) -> dict[str, Any]:
        return self.table.message({"dt": day}, **{k: [f.meta for f in v] for k, v in files.items()})

    def commit(self, messages: list[dict[str, Any]], after: Files, kind: str | None, **body: Any) -> None:
        """Commit, expect snapshot latest+1 of `kind` (or none), then the expiration that follows it."""
        time.sleep(0.003)
        response = self.api.post(
            f"{self.url}/commits",
            json={"commitUser": f"model-{uuid.uuid4()}", "messages": messages, **body},
        )
        assert response.status_code == 201, response.text
        snapshots = response.json()["snapshots"]
        if kind is None:
            assert snapshots == []
            return
        assert snapshots == [{"id": self.latest + 1, "commitKind": kind}]
        self.latest += 1
        self.states[self.latest] = after
        self.earliest = expected_earliest(
            self.earliest, self.latest, self.retention, list(self.consumers.values())
        )

    def snapshot_id(self, data: st.DataObject, beyond: int = 1) -> int:
        """Mostly a retained snapshot id, else one around the range: expired, or up to `beyond` past the
        latest."""
        around = st.integers(max(1, self.earliest - 1), self.latest + beyond)
        if not self.latest:
            return data.draw(around)
        return data.draw(st.sampled_from(self.retained()) | st.sampled_from(self.retained()) | around)

    def tag_name(self, data: st.DataObject) -> str:
        """Mostly an existing tag, else any name of the pool."""
        return data.draw(st.sampled_from(sorted(self.tags)) | st.sampled_from(TAGS))

    # ------------------------------------------------------------ writes

    @initialize(
        sizes=st.lists(st.integers(1, 3), min_size=1, max_size=5),
        tagged=st.none() | st.integers(0, 4),
        retention=RETENTIONS,
    )
    def history(self, sizes: list[int], tagged: int | None, retention: Retention) -> None:
        """A few appends in alternating partitions, perhaps a tag on one of them, then this example's
        retention: every example starts with snapshots, and many with a tag, to work on."""
        for i, size in enumerate(sizes):
            self.append([DAYS[i % 2]], size)
            if i == tagged:
                self.tag(TAGS[0], self.latest)
        self.set_retention(retention)

    @rule(days=st.lists(st.sampled_from(DAYS), min_size=1, max_size=2, unique=True), size=st.integers(1, 3))
    def append(self, days: list[str], size: int) -> None:
        new = [self.write(day, size) for day in days]
        after = {**self.live, **{f.path: f for f in new}}
        self.commit([self.message(f.day, newFiles=[f]) for f in new], after, "APPEND")

    @precondition(lambda self: any(len([f for f in self.live.values() if f.day == d]) >= 2 for d in DAYS))
    @rule(data=st.data())
    def compact(self, data: st.DataObject) -> None:
        """Replace two or more files of one partition by one file holding their rows."""
        candidates = [d for d in DAYS if len([f for f in self.live.values() if f.day == d]) >= 2]
        day = data.draw(st.sampled_from(candidates))
        paths = sorted(p for p, f in self.live.items() if f.day == day)
        before = [self.live[p] for p in data.draw(st.lists(st.sampled_from(paths), min_size=2, unique=True))]
        merged = self.write_rows(day, [row for f in before for row in f.rows])
        after = {p: f for p, f in self.live.items() if f not in before}
        after[merged.path] = merged
        message = self.message(day, compactBefore=before, compactAfter=[merged])
        self.commit([message], after, "COMPACT")

    @rule(
        mode=st.sampled_from(["table", "static", "dynamic"]),
        day=st.sampled_from(DAYS),
        size=st.integers(0, 3),
    )
    def overwrite(self, mode: str, day: str, size: int) -> None:
        """Overwrite the table, one partition, or the partitions written; with no rows it truncates."""
        new = [self.write(day, size)] if size else []
        if mode == "table":
            replaced = set(self.live)
        elif mode == "static" or new:
            replaced = {p for p, f in self.live.items() if f.day == day}
        else:
            replaced = set()
        after = {p: f for p, f in self.live.items() if p not in replaced}
        after.update((f.path, f) for f in new)
        spec: dict[str, Any] = {"mode": mode}
        if mode == "static":
            spec["partition"] = {"dt": day}
        messages = [self.message(day, newFiles=new)] if new else []
        self.commit(messages, after, "OVERWRITE" if replaced or new else None, overwrite=spec)

    @rule()
    def commit_nothing(self) -> None:
        """An empty committable, as a streaming writer commits at a checkpoint without data: no snapshot."""
        self.commit([], self.live, None)

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data())
    def delete_file(self, data: st.DataObject) -> None:
        """A commit that only deletes a file (as a row-level delete rewriting a whole file would)."""
        gone = self.live[data.draw(st.sampled_from(sorted(self.live)))]
        after = {p: f for p, f in self.live.items() if p != gone.path}
        self.commit([self.message(gone.day, deletedFiles=[gone])], after, "OVERWRITE")

    # ------------------------------------------------------------ retention and expiration

    @rule(retention=RETENTIONS)
    def set_retention(self, retention: Retention) -> None:
        """Change the retention options; nothing expires until the next commit or expiration."""
        options = {
            "snapshot.num-retained.min": str(retention.num_min),
            "snapshot.time-retained": retention.time_retained,
        }
        if retention.num_max is not None:
            options["snapshot.num-retained.max"] = str(retention.num_max)
        removed = [] if retention.num_max is not None else ["snapshot.num-retained.max"]
        response = self.api.patch(f"{self.url}/options", json={"set": options, "remove": removed})
        assert response.status_code == 200, response.text
        self.retention = retention

    @rule(retention=st.none() | RETENTIONS)
    def expire(self, retention: Retention | None) -> None:
        """Expire, under new retention options or the current ones."""
        if retention is not None:
            self.set_retention(retention)
        time.sleep(0.003)
        response = self.api.post(f"{self.url}/expire")
        assert response.status_code == 200, response.text
        before = self.earliest
        if self.latest:
            self.earliest = expected_earliest(
                self.earliest, self.latest, self.retention, list(self.consumers.values())
            )
        body = response.json()
        assert body["expiredSnapshots"] == self.earliest - before, body
        assert body["earliestSnapshotId"] == (self.earliest if self.latest else None), body
        assert body["latestSnapshotId"] == (self.latest or None), body

    # ------------------------------------------------------------ tags

    @rule(name=st.sampled_from(TAGS), data=st.data())
    def create_tag(self, name: str, data: st.DataObject) -> None:
        self.tag(name, None if data.draw(st.booleans()) else self.snapshot_id(data))

    def tag(self, name: str, snapshot_id: int | None) -> None:
        """Tag a snapshot (the latest when None): 404 unless it is retained, 409 if the name is taken."""
        target = self.latest if snapshot_id is None else snapshot_id
        response = self.api.post(f"{self.url}/tags", json={"name": name, "snapshotId": snapshot_id})
        if target not in self.retained():
            assert response.status_code == 404, response.text
        elif name in self.tags:
            assert response.status_code == 409, response.text
        else:
            assert response.status_code == 201, response.text
            assert response.json()["snapshotId"] == target
            self.tags[name] = target

    @precondition(lambda self: bool(self.tags))
    @rule(data=st.data())
    def delete_tag(self, data: st.DataObject) -> None:
        name = self.tag_name(data)
        response = self.api.delete(f"{self.url}/tags/{name}")
        assert response.status_code == (200 if name in self.tags else 404), response.text
        self.tags.pop(name, None)

    # ------------------------------------------------------------ consumers

    @rule(consumer=st.sampled_from(CONSUMERS), data=st.data())
    def set_consumer(self, consumer: str, data: st.DataObject) -> None:
        next_id = self.snapshot_id(data, beyond=2)
        response = self.api.put(f"{self.url}/consumers/{consumer}", json={"nextSnapshotId": next_id})
        if self.earliest <= next_id <= self.latest + 1:
            assert response.status_code == 200, response.text
            assert response.json()["nextSnapshotId"] == next_id
            self.consumers[consumer] = next_id
        else:
            assert response.status_code == 422, response.text

    @rule(consumer=st.sampled_from(CONSUMERS))
    def delete_consumer(self, consumer: str) -> None:
        response = self.api.delete(f"{self.url}/consumers/{consumer}")
        assert response.status_code == (204 if consumer in self.consumers else 404), response.text
        self.consumers.pop(consumer, None)

    # ------------------------------------------------------------ rollback

    @rule(data=st.data())
    def rollback_to_snapshot(self, data: st.DataObject) -> None:
        target = self.snapshot_id(data)
        response = self.api.post(f"{self.url}/rollback", json={"snapshotId": target})
        if target not in self.retained():
            assert response.status_code == 404, response.text
            return
        assert response.status_code == 200, response.text
        self.rolled_back(target, response.json())

    @precondition(lambda self: bool(self.tags))
    @rule(data=st.data())
    def rollback_to_tag(self, data: st.DataObject) -> None:
        name = self.tag_name(data)
        response = self.api.post(f"{self.url}/rollback", json={"tag": name})
        if name not in self.tags:
            assert response.status_code == 404, response.text
            return
        assert response.status_code == 200, response.text
        self.rolled_back(self.tags[name], response.json())

    def rolled_back(self, target: int, body: dict[str, Any]) -> None:
        """Later snapshots and tags go; a tag of an expired snapshot makes it the only retained one."""
        removed_tags = sorted(n for n, s in self.tags.items() if s > target)
        assert body["latestSnapshotId"] == target, body
        assert body["removedSnapshots"] == list(range(max(self.earliest, target + 1), self.latest + 1)), body
        assert body["removedTags"] == removed_tags, body
        for name in removed_tags:
            del self.tags[name]
        self.states = {i: f for i, f in self.states.items() if i <= target}
        self.earliest = min(self.earliest, target)
        self.latest = target

    # ------------------------------------------------------------ checks after every step

    @invariant()
    def service_lists_the_model(self) -> None:
        """The service's own answers agree: snapshots (expired and rolled-back ids are gone), tags and
        consumers."""
        snapshots = self.api.get(f"{self.url}/snapshots", params={"limit": 1000}).json()["snapshots"]
        assert [s["id"] for s in snapshots] == list(reversed(self.retained()))
        for gone in [self.earliest - 1, self.latest + 1]:  # the newest expired id, the next one to write
            if gone:
                assert self.api.get(f"{self.url}/snapshots/{gone}").status_code == 404, gone
        tags = self.api.get(f"{self.url}/tags").json()["tags"]
        assert {t["name"]: t["snapshotId"] for t in tags} == self.tags
        consumers = self.api.get(f"{self.url}/consumers").json()["consumers"]
        assert {c["consumerId"]: c["nextSnapshotId"] for c in consumers} == self.consumers

    @invariant()
    def pypaimon_reads_the_model(self) -> None:
        table_id = self.table.id
        assert read_rows(self.warehouse, table_id, {}) == rows_of(self.live), "latest"
        for snapshot_id in self.retained():
            rows = read_rows(self.warehouse, table_id, {"scan.snapshot-id": str(snapshot_id)})
            assert rows == rows_of(self.states[snapshot_id]), f"snapshot {snapshot_id}"
        for name, snapshot_id in self.tags.items():
            rows = read_rows(self.warehouse, table_id, {"scan.tag-name": name})
            assert rows == rows_of(self.states[snapshot_id]), f"tag {name} at snapshot {snapshot_id}"

    @invariant()
    def storage_holds_exactly_the_referenced_files(self) -> None:
        location = self.table.path
        data_files = {p.relative_to(location).as_posix() for p in location.rglob("*.parquet")}
        roots = [*self.retained(), *self.tags.values()]
        assert data_files == set().union(*(self.states[i].keys() for i in roots))
        snapshot_files = {f"snapshot-{i}" for i in self.retained()}
        assert {p.name for p in location.glob("snapshot/snapshot-*")} == snapshot_files
        tag_files = {f"tag-{name}" for name in self.tags}
        assert {p.name for p in location.glob("tag/tag-*")} == tag_files
        assert {p.name for p in location.glob("consumer/consumer-*")} == {
            f"consumer-{c}" for c in self.consumers
        }
        metadata = [location / "snapshot" / n for n in snapshot_files] + [
            location / "tag" / n for n in tag_files
        ]
        assert {p.name for p in location.glob("manifest/*")} == referenced_manifests(metadata)


def referenced_manifests(metadata: list[Path]) -> set[str]:
    """The manifest lists, manifests and index manifests the given snapshot (or tag) files name."""
    names: set[str] = set()
    for path in metadata:
        snapshot = json.loads(path.read_text())
        for key in ("baseManifestList", "deltaManifestList", "changelogManifestList"):
            if snapshot.get(key):
                names.add(snapshot[key])
                with (path.parent.parent / "manifest" / snapshot[key]).open("rb") as stream:
                    for record in fastavro.reader(stream):
                        assert isinstance(record, dict)
                        names.add(record["_FILE_NAME"])
        if snapshot.get("indexManifest"):
            names.add(snapshot["indexManifest"])
    return names


# 30 programs of 30 steps, each step read back by pypaimon: minutes per database, so not in the fast lane.
@pytest.mark.slow
def test_maintenance_keeps_readers_and_storage_consistent(api: TestClient, warehouse: Path) -> None:
    """Runs on SQLite and PostgreSQL (the `api` fixture's parameters); hypothesis wants a machine class,
    so a subclass binds this test's app."""

    class OnThisApp(MaintenanceMachine):
        """The machine bound to this test's app (one database); each example makes its own table."""

        def __init__(self) -> None:
            super().__init__(api, warehouse)

    run_state_machine_as_test(
        OnThisApp,
        settings=settings(
            max_examples=30,
            stateful_step_count=30,
            deadline=None,
            database=None,
            # No explain phase: it reruns a failing program many times over, minutes of pypaimon reads.
            phases=[Phase.generate, Phase.shrink],
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
