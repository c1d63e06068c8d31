"""Manifest merge keeps the base manifest list bounded, and merged manifests cancel ADD/DELETE pairs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coordinator.services import Services
from coordinator_client.models import CommitRequest, CreateTableRequest, FieldSpec
from paimon_format.manifest import FileKind, decode_manifest, decode_manifest_list
from tests.support.paimon_files import PaimonTable, pypaimon_rows


def _table(
    services: Services, name: str, options: dict[str, str] | None = None, pk: bool = False
) -> PaimonTable:
    fields = [FieldSpec(name="dt", type="STRING"), FieldSpec(name="id", type="BIGINT")]
    created = services.tables.create(
        CreateTableRequest(
            database="db",
            name=name,
            fields=fields,
            partition_keys=["dt"],
            primary_keys=["dt", "id"] if pk else [],
            options=options or {},
        )
    )
    schema = created.shape.schema
    return PaimonTable(
        {
            "id": created.id,
            "location": created.location,
            "schema": {
                "fields": [{"name": f.name, "type": f.type} for f in schema.fields],
                "partitionKeys": ["dt"],
                "primaryKeys": list(schema.primary_keys),
                "options": dict(schema.options),
            },
        }
    )


def _commit(services: Services, table: PaimonTable, user: str, messages: list[dict[str, Any]]) -> list[int]:
    request = CommitRequest.model_validate({"commitUser": user, "messages": messages})
    return [s.id for s in services.committer.commit(table.id, request).snapshots]


def _manifests_of(table: PaimonTable, snapshot_id: int) -> tuple[list[Any], list[Any]]:
    import json

    snapshot = json.loads((table.path / "snapshot" / f"snapshot-{snapshot_id}").read_text())

    def read(name: str) -> list[Any]:
        return decode_manifest_list((table.path / "manifest" / name).read_bytes())

    return read(snapshot["baseManifestList"]), read(snapshot["deltaManifestList"])


@pytest.mark.slow
def test_base_list_stays_bounded_over_500_commits(services: Services, warehouse: Path) -> None:
    table = _table(services, "busy")
    expected = []
    most = 0
    for i in range(500):
        row = {"dt": f"d{i % 7}", "id": i}
        expected.append(row)
        assert _commit(services, table, f"job-{i}", [table.append_message([row])]) == [i + 1]
        base, delta = _manifests_of(table, i + 1)
        most = max(most, len(base))
        assert len(delta) == 1
    assert most <= 31
    base, _ = _manifests_of(table, 500)
    assert sum(m.num_added_files for m in base) == 499
    assert sorted(r["id"] for r in pypaimon_rows(warehouse, table.id)) == list(range(500))


def test_full_compaction_cancels_add_delete_pairs(services: Services, warehouse: Path) -> None:
    # Small thresholds so a handful of commits crosses them, as 16 MiB of manifests would in production.
    table = _table(
        services,
        "churn",
        pk=True,
        options={
            "bucket": "1",
            "manifest.target-file-size": "4 kb",
            "manifest.merge-min-count": "3",
            "manifest.full-compaction-threshold-size": "6 kb",
        },
    )
    sequence = 0
    live: list[dict[str, Any]] = []
    model: dict[int, dict[str, Any]] = {}
    for i in range(12):
        rows: list[dict[str, Any]] = [{"dt": "a", "id": i * 10 + j} for j in range(10)]
        f = table.pk_file(rows, first_sequence=sequence)
        sequence += 10
        _commit(services, table, f"w-{i}", [table.message(rows[0], newFiles=[f])])
        live.append(f)
        model.update({r["id"]: r for r in rows})
        if i % 4 == 3:
            merged = table.pk_file(list(model.values()), first_sequence=sequence, level=5)
            sequence += len(model)
            before = [
                {k: x[k] for k in ("fileName", "fileSize", "rowCount", "minKey", "maxKey", "level")}
                for x in live
            ]
            _commit(
                services,
                table,
                f"c-{i}",
                [table.message(rows[0], compactBefore=before, compactAfter=[merged])],
            )
            live = [merged]
    latest = int((table.path / "snapshot" / "LATEST").read_text())
    base, _delta = _manifests_of(table, latest)
    entries = [e for m in base for e in decode_manifest((table.path / "manifest" / m.file_name).read_bytes())]
    # Full compaction rewrote the base: no DELETE survives and no deleted file is still listed.
    assert [e for e in entries if e.kind == FileKind.DELETE] == []
    assert len(base) < latest
    assert sorted(r["id"] for r in pypaimon_rows(warehouse, table.id)) == sorted(model)


def test_manifests_roll_at_the_target_size(services: Services, warehouse: Path) -> None:
    table = _table(services, "wide", options={"manifest.target-file-size": "2 kb"})
    rows = [{"dt": f"d{i % 5}", "id": i} for i in range(60)]
    messages = [table.append_message([r]) for r in rows]
    assert _commit(services, table, "big", messages) == [1]
    _, delta = _manifests_of(table, 1)
    assert len(delta) > 1
    assert sum(m.num_added_files for m in delta) == 60
    sizes = [m.file_size for m in delta]
    assert max(sizes) < 2 * 2048
    assert sorted(r["id"] for r in pypaimon_rows(warehouse, table.id)) == list(range(60))
