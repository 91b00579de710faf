"""Hudi's change log (``HudiTableFormat.changed_files``) and ``sample refresh`` of Hudi tables
(../shared/fixtures/hudi, written by Spark with Hudi 0.14 and 1.1).

References: hudi-rs's own file slices as of each instant (the file lists refresh would
otherwise compare), the commit metadata Hudi wrote, hudi-rs's snapshot read for the rows,
file sizes from the file system and a fresh ``sample create`` for the refreshed sample. A
commit "lands" in a copy of a fixture: its instant files and the files it wrote are moved
aside (the table as it was before that writer ran) and moved back after the sample is
drawn, which is exactly what the writer's commit did to the table's directory.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import lakestats.api as ls
from lakestats.formats.hudi import HudiTableFormat
from lakestats.store.sample import HASH_COLUMN, read_file

FIXTURES = [
    "v6_complexkeygen_hivestyle",  # copy-on-write: an upsert and a new partition
    "v6_nonpartitioned",  # copy-on-write: an upsert rewrites the only file group
    "v6_trips_8i1u",  # merge-on-read: an update in a log file
    "v9_nonpartitioned_rollback",  # table version 9 (.hoodie/timeline/, Avro metadata)
]


def _hudi(path: Path):
    from hudi import HudiTableBuilder

    return HudiTableBuilder.from_base_uri(str(path)).build()


def _writable_copy(
    fixtures_dir: Path, tmp_path: Path, name: str = "v6_complexkeygen_hivestyle"
) -> Path:
    """A copy of a fixture (they are read-only) that the test may change."""
    path = tmp_path / "table"
    shutil.copytree(fixtures_dir / "hudi" / name, path)
    for f in (path, *path.rglob("*")):
        f.chmod(f.stat().st_mode | 0o200)
    return path


def _instants(path: Path) -> list:
    timeline = _hudi(path).get_timeline()
    instants = timeline.get_completed_commits() + timeline.get_completed_deltacommits()
    return sorted(instants, key=lambda i: int(i.timestamp))


def _slices_as_of(path: Path, instant: str) -> dict[str, tuple[str, str]]:
    """hudi-rs's file slices as of ``instant``: each base and log file (relative path) ->
    its file group (partition, file id)."""
    from hudi import HudiReadOptions

    files = {}
    for piece in _hudi(path).get_file_slices(HudiReadOptions().with_as_of_timestamp(instant)):
        group = (piece.partition_path, piece.file_id)
        if piece.base_file_name:
            files[piece.base_file_relative_path()] = group
        files.update({log: group for log in piece.log_files_relative_paths()})
    return files


def _files_as_of(path: Path, instant: str) -> set[str]:
    return set(_slices_as_of(path, instant))


def _written(path: Path, instant) -> list[str]:
    """The files Hudi's commit metadata says the instant wrote."""
    metadata = json.loads(_hudi(path).get_timeline().get_instant_metadata_in_json(instant))
    return [s["path"] for stats in metadata["partitionToWriteStats"].values() for s in stats]


@pytest.mark.parametrize("name", FIXTURES)
def test_change_log_covers_every_file_that_differs(
    fixtures_dir: Path, tmp_path: Path, name: str
) -> None:
    """The reference for the files of the first instant: hudi-rs's listing of the table as
    it was before the second commit's writer ran (hudi-rs's as-of listing also shows log
    files written later, whose blocks it skips)."""
    path = fixtures_dir / "hudi" / name
    table = HudiTableFormat(str(path))
    first, last = (i.timestamp for i in _instants(path))
    assert [s.snapshot_id for s in table.snapshots()] == [int(first), int(last)]
    earlier = _writable_copy(fixtures_dir, tmp_path, name)
    _hide_last_commit(earlier, tmp_path / "stash")
    differ = set(_slices_as_of(earlier, first)) ^ _files_as_of(path, last)
    assert differ, "the fixture's second commit changes files"
    changed = table.changed_files(int(first), int(last))
    assert differ <= changed, sorted(differ - changed)
    assert set(_written(path, _instants(path)[-1])) <= changed
    # nothing but files of the two snapshots (the changed file groups' versions)
    assert changed <= set(_slices_as_of(earlier, first)) | _files_as_of(path, last)
    for stamp in (first, last):
        assert table.changed_files(int(stamp), int(stamp)) == set()


def test_change_log_is_none_when_the_start_was_archived(fixtures_dir: Path, tmp_path: Path):
    """An instant moved to the archive (.hoodie/archived, as Hudi's archiver does) is no
    longer on the active timeline: the log does not reach back, refresh compares files."""
    path = _writable_copy(fixtures_dir, tmp_path)
    first, second = (int(i.timestamp) for i in _instants(path))
    assert HudiTableFormat(str(path)).changed_files(first, second) is not None
    archived = path / ".hoodie" / "archived"
    archived.mkdir()
    for f in (path / ".hoodie").glob(f"{first}.*"):
        shutil.move(f, archived / f.name)
    table = HudiTableFormat(str(path))
    assert [s.snapshot_id for s in table.snapshots()] == [second]
    assert table.changed_files(first, second) is None
    assert table.changed_files(second, second) == set()
    assert table.changed_files(second, first) is None  # backwards: no log
    assert table.changed_files(None, second) is None


def _hide_last_commit(path: Path, stash: Path) -> list[Path]:
    """Move the last commit's instant files and the files it wrote aside: the table as it
    was before its writer ran. Returns what was moved (relative paths)."""
    instant = _instants(path)[-1]
    moved = [Path(p) for p in _written(path, instant)]
    for folder in (path / ".hoodie", path / ".hoodie" / "timeline"):
        if folder.is_dir():
            mine = [f for f in folder.iterdir() if f.name.startswith(instant.timestamp)]
            moved += [f.relative_to(path) for f in mine]
    for relative in moved:
        (stash / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(path / relative, stash / relative)
    return moved


def _land(path: Path, stash: Path, moved: list[Path]) -> None:
    """The commit lands: data files first, then the completed instant (as Hudi writes)."""
    for relative in sorted(moved, key=lambda p: p.parts[0] == ".hoodie"):
        shutil.move(stash / relative, path / relative)


def _hudi_rows(path: Path) -> pa.Table:
    return pa.Table.from_batches(_hudi(path).read())


def _sampled(table: ls.LakestatsTable) -> pa.Table:
    listed = table.sample.manifest().to_json()["partitions"]
    parts = [read_file(table.store, p["file"]) for p in listed if p["file"]]
    return pa.concat_tables(parts, promote_options="permissive")


@pytest.mark.spark
@pytest.mark.parametrize("name", FIXTURES)
def test_refresh_reads_only_the_file_groups_a_commit_touched(
    spark, fixtures_dir: Path, tmp_path: Path, name: str
) -> None:
    path, stash = _writable_copy(fixtures_dir, tmp_path, name), tmp_path / "stash"
    moved = _hide_last_commit(path, stash)
    before_files = _files_as_of(path, _instants(path)[-1].timestamp)
    table = ls.open_table(str(path), str(tmp_path / "stats"))
    table.sample.create(fraction=1.0, seed=5, spark=spark)  # every row: comparable exactly
    _land(path, stash, moved)
    now = _instants(path)[-1].timestamp
    after = _slices_as_of(path, now)
    after_files = set(after)
    # the reference: the file groups whose files changed, all their current files read
    changed_groups = {after[f] for f in after_files - before_files}
    to_read = {f for f, group in after.items() if group in changed_groups}
    assert to_read
    if not name.endswith("nonpartitioned"):  # another partition's groups stay unread
        assert to_read != after_files

    result = table.sample.refresh(spark=spark)
    assert result.files_read == len(to_read), (result, sorted(to_read))
    assert result.bytes_read == sum((path / f).stat().st_size for f in to_read)
    changes = table.sample.manifest().to_json()["changes"]
    assert changes["change_log_files"] is not None  # read from the timeline
    assert changes["change_log_files"] >= len(before_files ^ after_files)
    assert table.sample.manifest().to_json()["snapshot_id"] == int(now)

    # the refreshed sample: every current row (fraction 1), as a fresh create draws it
    truth = _hudi_rows(path)
    mine = _sampled(table)
    keys = sorted(mine["_hoodie_record_key"].to_pylist())
    assert keys == sorted(truth["_hoodie_record_key"].to_pylist())
    assert mine.num_rows == truth.num_rows
    order = [("_hoodie_record_key", "ascending"), ("_hoodie_commit_time", "ascending")]
    assert mine.sort_by(order)["_hoodie_commit_time"].equals(
        truth.sort_by(order)["_hoodie_commit_time"]
    )
    fresh = ls.open_table(str(path), str(tmp_path / "fresh"))
    fresh.sample.create(fraction=1.0, seed=5, spark=spark)
    theirs = _sampled(fresh)
    assert sorted(mine[HASH_COLUMN].to_pylist()) == sorted(theirs[HASH_COLUMN].to_pylist())
    again = table.sample.refresh(spark=spark)
    assert (again.files_read, again.bytes_read, again.partitions_sampled) == (0, 0, 0)


def _replace_commit(
    path: Path, stamp: str, replaced: dict[str, list[str]], copies: dict[str, str]
) -> None:
    """Complete a ``replacecommit`` as Hudi's insert_overwrite does: new base files (here
    copies of existing ones, ``copies``: new relative path -> source) and, in the commit
    metadata, the file groups they replace. No Hudi writer runs in these tests, so the
    instant's JSON is written here, in the layout of the fixture's own commit files."""
    for new, source in copies.items():
        shutil.copyfile(path / source, path / new)
    last = path / ".hoodie" / f"{_instants(path)[-1].timestamp}.commit"
    template = json.loads(last.read_text())
    stats: dict[str, list[dict]] = {}
    for new in copies:
        partition, name = new.rsplit("/", 1)
        stats.setdefault(partition, []).append(
            {"fileId": name.split("_")[0], "path": new, "partitionPath": partition,
             "prevCommit": "null", "numWrites": 2, "numInserts": 2,
             "fileSizeInBytes": (path / new).stat().st_size}
        )
    metadata = {
        "partitionToWriteStats": stats,
        "partitionToReplaceFileIds": replaced,
        "compacted": False,
        "extraMetadata": template["extraMetadata"],
        "operationType": "INSERT_OVERWRITE",
    }
    for suffix in ("replacecommit.requested", "replacecommit.inflight"):
        (path / ".hoodie" / f"{stamp}.{suffix}").write_text("")
    (path / ".hoodie" / f"{stamp}.replacecommit").write_text(json.dumps(metadata))


_OVERWRITTEN = "byteField=10/shortField=300"
_OLD_GROUP = "a22e8257-e249-45e9-ba46-115bc85adcba-0"
_NEW_FILE = f"{_OVERWRITTEN}/c1c1c1c1-0000-4000-8000-000000000000-0_0-1-1_20240418180000000.parquet"


def _overwrite_partition(path: Path) -> None:
    source = next(p for p in _files_as_of(path, _instants(path)[-1].timestamp)
                  if p.startswith(_OVERWRITTEN))
    _replace_commit(path, "20240418180000000", {_OVERWRITTEN: [_OLD_GROUP]},
                    {_NEW_FILE: source})


def test_change_log_names_the_file_groups_a_replace_commit_replaced(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    path = _writable_copy(fixtures_dir, tmp_path)
    before = _instants(path)[-1].timestamp
    _overwrite_partition(path)
    table = HudiTableFormat(str(path))
    assert table.snapshots()[-1].snapshot_id == 20240418180000000
    changed = table.changed_files(int(before), 20240418180000000)
    differ = _files_as_of(path, before) ^ _files_as_of(path, "20240418180000000")
    assert _NEW_FILE in differ and any(_OLD_GROUP in f for f in differ)  # hudi-rs replaced it
    assert differ <= changed
    # every version of the replaced file group, not only the live one
    assert {f for f in changed if _OLD_GROUP in f} == {
        f"{_OVERWRITTEN}/{_OLD_GROUP}_1-140-199_20240418173213674.parquet",
        f"{_OVERWRITTEN}/{_OLD_GROUP}_0-161-223_20240418173235694.parquet",
    }


def test_change_log_is_none_when_a_replaced_group_was_written_by_an_archived_instant(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    path = _writable_copy(fixtures_dir, tmp_path)
    first, second = (i.timestamp for i in _instants(path))
    archived = path / ".hoodie" / "archived"
    archived.mkdir()
    for f in (path / ".hoodie").glob(f"{first}.*"):
        shutil.move(f, archived / f.name)
    # the group of byteField=20/shortField=100 was written only by the archived instant
    partition = "byteField=20/shortField=100"
    group = "bb7c3a45-387f-490d-aab2-981c3f1a8ada-0"
    _replace_commit(path, "20240418180000000", {partition: [group]}, {})
    assert HudiTableFormat(str(path)).changed_files(int(second), 20240418180000000) is None


@pytest.mark.spark
def test_refresh_after_an_insert_overwrite_resamples_only_that_partition(
    spark, fixtures_dir: Path, tmp_path: Path
) -> None:
    path = _writable_copy(fixtures_dir, tmp_path)
    table = ls.open_table(str(path), str(tmp_path / "stats"))
    table.sample.create(fraction=1.0, seed=5, spark=spark)
    _overwrite_partition(path)
    result = table.sample.refresh(spark=spark)
    assert (result.files_read, result.partitions_resampled) == (1, 1)
    assert result.bytes_read == (path / _NEW_FILE).stat().st_size
    changes = table.sample.manifest().to_json()["changes"]
    assert changes["partitions_resampled"] == [_OVERWRITTEN]
    assert changes["partitions_updated"] == []
    truth = _hudi_rows(path)
    assert sorted(_sampled(table)["_hoodie_record_key"].to_pylist()) == sorted(
        truth["_hoodie_record_key"].to_pylist()
    )


@pytest.mark.spark
def test_refresh_sees_a_log_file_written_while_its_commit_was_in_flight(
    spark, fixtures_dir: Path, tmp_path: Path
) -> None:
    """A merge-on-read writer writes its log file before it completes the instant: a sample
    drawn in between must not count the log (hudi-rs skips its uncommitted block), so the
    file group changes, and is read again, when the instant completes."""
    path = _writable_copy(fixtures_dir, tmp_path, "v6_trips_8i1u")
    last = _instants(path)[-1]
    (log,) = _written(path, last)
    completed = path / ".hoodie" / f"{last.timestamp}.deltacommit"
    shutil.move(completed, tmp_path / completed.name)  # the instant still in flight
    assert (path / log).exists()
    table = ls.open_table(str(path), str(tmp_path / "stats"))
    table.sample.create(fraction=1.0, seed=5, spark=spark)
    assert set(_sampled(table)["_hoodie_commit_time"].to_pylist()) == {
        _instants(path)[0].timestamp
    }
    shutil.move(tmp_path / completed.name, completed)
    result = table.sample.refresh(spark=spark)
    group = {f for f in _files_as_of(path, last.timestamp) if f.startswith(log.split("/")[0])}
    assert group == {log, next(f for f in group if f.endswith(".parquet"))}
    assert result.files_read == 2
    assert result.bytes_read == sum((path / f).stat().st_size for f in group)
    truth = _hudi_rows(path).sort_by("_hoodie_record_key")
    mine = _sampled(table).sort_by("_hoodie_record_key")
    assert mine["_hoodie_commit_time"].equals(truth["_hoodie_commit_time"])
    assert last.timestamp in truth["_hoodie_commit_time"].to_pylist()
