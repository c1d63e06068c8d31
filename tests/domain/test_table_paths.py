"""The path rule (domain/table_paths) and the rules for entries a REST writer proposes
(domain/proposed_entries), without storage: what stays inside a table, what fits its layout."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from coordinator.domain.proposed_entries import MAX_COUNT, EntryRules
from coordinator.domain.table_paths import (
    check_inside,
    external_problem,
    external_roots,
    inside,
    name_problem,
)
from coordinator.errors import InvalidRequest, PathOutsideTable
from paimon_format.binary_row import EMPTY_ROW
from paimon_format.manifest import FileKind, ManifestEntry, SimpleStats
from paimon_format.manifest_meta import manifest_file_meta
from tests.support.builders import ADD, append_shape, entry, key, partition, pk_shape, shape


@pytest.mark.parametrize(
    "name",
    [
        "data-0b5e-0.parquet",
        "manifest-list-1f-1",
        "index-manifest-3-0",
        "stat-9-0",
        "data.index",
        ".x",
        "a..b",
    ],
)
def test_bare_names(name: str) -> None:
    assert name_problem(name) is None


@pytest.mark.parametrize(
    "name",
    [
        "",
        ".",
        "..",
        "../data.parquet",
        "dt=x/data.parquet",
        "a\\b",
        "/abs",
        "s3://bucket/k",
        "data\x00.parquet",
        "data\n",
        "x" * 256,
        "é" * 128,  # 256 bytes in UTF-8
        7,
        None,
        b"data.parquet",
    ],
)
def test_names_that_are_not_bare(name: object) -> None:
    assert name_problem(name) is not None


@pytest.mark.parametrize(
    ("folder", "path", "expected"),
    [
        ("/wh/a.db/t1", "/wh/a.db/t1/dt=x/bucket-0/data.parquet", True),
        ("/wh/a.db/t1", "/wh/a.db/t1/manifest/manifest-1-0", True),
        ("/wh/a.db/t1", "file:///wh/a.db/t1/manifest/m", True),
        ("/wh/a.db/t1", "/wh/a.db/t1", False),  # the folder itself
        ("/wh/a.db/t1", "/wh/a.db/t10/data.parquet", False),  # a sibling with the same prefix
        ("/wh/a.db/t1", "/wh/a.db/t1/dt=x/bucket-0/../../../../b.db/t2/bucket-0/d.parquet", False),
        ("/wh/a.db/t1", "/wh/a.db/t1/manifest/../m", False),  # inside once resolved, but not as spelled
        ("/wh/a.db/t1", "/wh/a.db/t1//m", False),
        ("s3://bucket/wh/a.db/t1", "s3://bucket/wh/a.db/t1/bucket-0/d.parquet", True),
        ("s3://bucket/wh/a.db/t1", "s3://other/wh/a.db/t1/bucket-0/d.parquet", False),
        ("s3://bucket/wh/a.db/t1", "s3://bucket/wh/a.db/t1/../t2/d.parquet", False),
        ("s3://bucket/wh/a.db/t1", "s3://bucket/wh/b.db/t2/d.parquet", False),
    ],
)
def test_inside_a_table_folder(folder: str, path: str, expected: bool) -> None:
    assert inside(folder, path) is expected


def test_a_delete_never_names_a_control_character() -> None:
    assert inside("/wh/a.db/t1", "/wh/a.db/t1/m\x00")  # inside, but no store names it reliably
    with pytest.raises(PathOutsideTable):
        check_inside("/wh/a.db/t1", "/wh/a.db/t1/m\x00", "an extra file")
    check_inside("/wh/a.db/t1", "/wh/a.db/t1/dt=x/bucket-0/d.parquet", "a data file")


def test_a_delete_outside_names_the_path() -> None:
    with pytest.raises(PathOutsideTable, match=r"b\.db/t2") as refused:
        check_inside("/wh/a.db/t1", "/wh/a.db/t1/../../b.db/t2/d.parquet", "a data file")
    assert refused.value.status_code == 422


def test_external_paths_only_under_the_table_roots() -> None:
    assert external_roots({}) == ()
    roots = external_roots({"data-file.external-paths": " s3://ext/a , /mnt/ext ,"})
    assert roots == ("s3://ext/a", "/mnt/ext")
    assert external_problem("s3://ext/a/dt=x/bucket-0/d.parquet", roots) is None
    assert external_problem("s3a://ext/a/d.parquet", roots) is None  # one store, two spellings
    assert external_problem("/mnt/ext/d.parquet", roots) is None
    for path in (
        "s3://ext/a",  # the root itself
        "s3://ext/ab/d.parquet",
        "s3://ext/a/../b/d.parquet",
        "oss://ext/a/d.parquet",  # another store under the same bucket name
        "/mnt/other/d.parquet",
        "relative/d.parquet",
    ):
        assert external_problem(path, roots) is not None, path
    assert "not set" in (external_problem("s3://ext/a/d.parquet", ()) or "")


def _refused(rules: EntryRules, e: ManifestEntry) -> str:
    with pytest.raises(InvalidRequest) as refused:
        rules.check_entry(e, "snapshot.deltaManifestList[0].entries[3]")
    assert refused.value.field is not None
    return refused.value.field.removeprefix("snapshot.deltaManifestList[0].entries[3].")


def _file(e: ManifestEntry, **changes: Any) -> ManifestEntry:
    return dataclasses.replace(e, file=dataclasses.replace(e.file, **changes))


def test_an_entry_that_fits_a_fixed_bucket_table() -> None:
    rules = EntryRules.of(pk_shape(2))
    rules.check_entry(entry(ADD, "data-1.parquet", bucket=1, keys=(1, 5)), "e")
    # Files a postpone table's compaction wrote, or another bucket count an overwrite rescaled to.
    rules.check_entry(entry(ADD, "data-2.parquet", bucket=3, total_buckets=4, keys=(1, 5)), "e")


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"bucket": 2}, "bucket"),
        ({"bucket": -1}, "bucket"),
        ({"total_buckets": 0}, "totalBuckets"),
        ({"total_buckets": -1}, "totalBuckets"),
        ({"partition": EMPTY_ROW}, "partition"),
        ({"partition": b"\x00\x00\x00\x01garbage"}, "partition"),
        ({"partition": "dt=x"}, "partition"),
    ],
)
def test_an_entry_that_does_not_fit_the_layout(changes: dict[str, Any], field: str) -> None:
    e = dataclasses.replace(entry(ADD, "data-1.parquet", keys=(1, 5)), **changes)
    assert _refused(EntryRules.of(pk_shape(2)), e) == field


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"file_name": "../x.parquet"}, "fileName"),
        ({"extra_files": ("ok.index", "../x.index")}, "extraFiles[1]"),
        ({"external_path": "/wh/b.db/t2/x.parquet"}, "externalPath"),
        ({"row_count": -1}, "rowCount"),
        ({"row_count": MAX_COUNT + 1}, "rowCount"),
        ({"file_size": 2**63 - 1}, "fileSize"),
        ({"delete_row_count": 11}, "deleteRowCount"),
        ({"level": 99}, "level"),
        ({"schema_id": 1}, "schemaId"),
        ({"schema_id": "0"}, "schemaId"),
        ({"min_key": EMPTY_ROW}, "minKey"),
        ({"max_key": key(1)[:-3]}, "maxKey"),
        ({"min_sequence_number": 2**64}, "minSequenceNumber"),
    ],
)
def test_a_file_that_does_not_fit(changes: dict[str, object], field: str) -> None:
    e = _file(entry(ADD, "data-1.parquet", keys=(1, 5)), **changes)
    assert _refused(EntryRules.of(pk_shape(2)), e) == field


def test_a_refusal_says_how_entries_are_named() -> None:
    with pytest.raises(PathOutsideTable) as refused:
        EntryRules.of(pk_shape(2)).check_entry(
            _file(entry(ADD, "data-1.parquet", keys=(1, 5)), file_name="../../b.db/t2/d.parquet"),
            "snapshot.deltaManifestList[0].entries[3]",
        )
    assert refused.value.message.startswith("snapshot.deltaManifestList[0].entries[3].fileName:")
    assert "the i-th manifest of that list and the j-th entry of that manifest" in refused.value.message


def test_bucket_unaware_dynamic_and_postpone_tables() -> None:
    unaware = EntryRules.of(append_shape())
    unaware.check_entry(entry(ADD, "d.parquet", total_buckets=-1), "e")
    assert _refused(unaware, entry(ADD, "d.parquet", bucket=1, total_buckets=-1)) == "bucket"
    assert _refused(unaware, entry(ADD, "d.parquet", total_buckets=-2)) == "totalBuckets"
    fields = {"dt": "STRING NOT NULL", "id": "BIGINT NOT NULL"}
    dynamic = EntryRules.of(shape(fields, partition_keys=["dt"], primary_keys=["dt", "id"]))
    dynamic.check_entry(entry(ADD, "d.parquet", bucket=7, total_buckets=-1, keys=(1, 2)), "e")
    postpone = EntryRules.of(
        shape(fields, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "-2"})
    )
    postpone.check_entry(entry(ADD, "d.parquet", bucket=-2, total_buckets=-2, keys=(1, 2)), "e")
    assert _refused(postpone, entry(ADD, "d.parquet", bucket=0, total_buckets=-2, keys=(1, 2))) == "bucket"


def test_an_external_path_under_the_table_roots() -> None:
    rules = EntryRules.of(append_shape(**{"data-file.external-paths": "s3://ext/t1"}))
    e = entry(ADD, "d.parquet", total_buckets=-1)
    rules.check_entry(_file(e, external_path="s3://ext/t1/dt=a/bucket-0/d.parquet"), "e")
    assert _refused(rules, _file(e, external_path="s3://ext/t2/d.parquet")) == "externalPath"


def test_a_manifest_counts_its_entries_as_its_list_says() -> None:
    rules = EntryRules.of(pk_shape(2))
    entries = [entry(ADD, "a.parquet", keys=(1, 2)), entry(FileKind.DELETE, "b.parquet", keys=(3, 4))]
    stats = SimpleStats(partition("a"), partition("a"), (0,))
    meta = manifest_file_meta("manifest-1-0", 100, entries, 0, stats)
    rules.check_meta(meta, "snapshot.deltaManifestList[0]")
    rules.check_entries(entries, meta, "snapshot.deltaManifestList[0]")
    with pytest.raises(InvalidRequest) as refused:
        rules.check_entries(entries[:1], meta, "snapshot.deltaManifestList[0]")
    assert refused.value.field == "snapshot.deltaManifestList[0].numDeletedFiles"
    for changes, field in (
        ({"file_name": "../m"}, "fileName"),
        ({"num_added_files": -1}, "numAddedFiles"),
        ({"schema_id": 4}, "schemaId"),
        ({"min_bucket": "0"}, "minBucket"),
    ):
        with pytest.raises(InvalidRequest) as refused:
            rules.check_meta(dataclasses.replace(meta, **changes), "snapshot.deltaManifestList[0]")
        assert refused.value.field == f"snapshot.deltaManifestList[0].{field}"
