"""The statistics store under faults: concurrent publishers, damaged manifests and files,
a full disk, a root that is a file, an unreachable S3 endpoint."""

from __future__ import annotations

import errno
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lakestats import cli, fs
from lakestats.compute import analyze
from lakestats.errors import (
    ConflictError,
    CorruptStatisticsError,
    LakestatsError,
    StatisticsNotFoundError,
    StorageError,
)
from lakestats.store import expire, handle, layout, manifest, writer
from lakestats.store.handle import StatisticsStore
from tests.store.test_s3 import s3_endpoint  # noqa: F401 - the moto server fixture

PUBLISHERS = 12
ROUNDS = 4


def _version(snapshot: int, run: str) -> manifest.Version:
    return manifest.Version(
        version=0,
        created_at="2026-11-22T00:00:00+00:00",
        table=manifest.TableRef("parquet", "t", "t"),
        snapshot_id=snapshot,
        schema_id=None,
        options={},
        columns=[{"name": "n", "type": "int64"}],
        partitions=[],
        run_id=run,
    )


def _race(root: str, s3: fs.S3Options | None, snapshots: list[int], tag: str) -> list:
    """``len(snapshots)`` publishers released at once through analyze's publish step;
    each outcome is the number it published or the error it raised."""
    barrier = threading.Barrier(len(snapshots))

    def publish(i: int) -> object:
        version = _version(snapshots[i], f"{tag}-{i}")
        barrier.wait(timeout=60)
        try:
            return analyze.publish_version(StatisticsStore(root, s3), version)
        except LakestatsError as exc:
            return exc

    with ThreadPoolExecutor(len(snapshots)) as pool:
        return list(pool.map(publish, range(len(snapshots))))


def _check_monotonic_rounds(root: str, s3: fs.S3Options | None) -> None:
    published: list[int] = []
    for round_ in range(ROUNDS):
        snapshots = [round_ * 100 + i for i in range(PUBLISHERS)]  # all different: all publish
        outcomes = _race(root, s3, snapshots, f"r{round_}")
        assert all(isinstance(o, int) for o in outcomes), outcomes
        published += outcomes
        numbers = manifest.version_numbers(StatisticsStore(root, s3))
        assert sorted(published) == numbers == list(range(1, len(numbers) + 1))
        store = StatisticsStore(root, s3)
        latest = manifest.load_version(store, None)
        assert latest.version == max(numbers) == manifest.latest_version_number(store)
        by_number = {n: manifest.load_version(store, n).run_id for n in numbers}
        assert len(set(by_number.values())) == len(numbers)  # no version overwritten


def _check_same_snapshot_on_empty_root(root: str, s3: fs.S3Options | None) -> None:
    """Publishers of one snapshot racing on an empty root: those that collide with a
    winner of the same snapshot are told its result stands (never "no statistics"); one
    that lists after a winner published simply publishes the next version, as a later
    analyze of the same snapshot would."""
    outcomes = _race(root, s3, [7] * PUBLISHERS, "same")
    winners = sorted(o for o in outcomes if isinstance(o, int))
    assert winners == list(range(1, len(winners) + 1)) and winners
    for loser in (o for o in outcomes if not isinstance(o, int)):
        assert isinstance(loser, ConflictError), loser
        assert "for the same snapshot" in str(loser) and "its result stands" in str(loser)
    latest = manifest.load_version(StatisticsStore(root, s3), None)
    assert (latest.version, latest.snapshot_id) == (winners[-1], 7)


def test_latest_never_goes_backwards_with_many_publishers_on_local_disk(tmp_path: Path) -> None:
    _check_monotonic_rounds(str(tmp_path / "stats"), None)
    _check_same_snapshot_on_empty_root(str(tmp_path / "empty"), None)


@pytest.mark.s3
def test_latest_never_goes_backwards_with_many_publishers_on_s3(
    s3_endpoint: fs.S3Options,  # noqa: F811
) -> None:
    stamp = time.monotonic_ns()
    _check_monotonic_rounds(f"s3://lakestats-test/race-{stamp}/stats", s3_endpoint)
    _check_same_snapshot_on_empty_root(f"s3://lakestats-test/race-{stamp}/empty", s3_endpoint)


def test_a_late_acknowledged_write_publishes_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conditional write whose first attempt stored the file but whose answer was lost
    (S3 retried the request, which then found the file): the publisher keeps its version
    and does not publish the same statistics again under the next number."""
    root = str(tmp_path / "stats")
    create = StatisticsStore.create_exclusive
    answers: list[bool] = []

    def acknowledged_late(self: StatisticsStore, uri: str, data: bytes) -> bool:
        created = create(self, uri, data)
        answers.append(created)
        return created and len(answers) > 1  # the first write's "created" is lost

    monkeypatch.setattr(StatisticsStore, "create_exclusive", acknowledged_late)
    number = analyze.publish_version(StatisticsStore(root, None), _version(7, "late"))
    store = StatisticsStore(root, None)
    assert answers == [True]
    assert number == 1 and manifest.version_numbers(store) == [1]
    assert manifest.load_version(store, None).run_id == "late"


def test_a_stale_latest_hint_is_not_trusted(tmp_path: Path) -> None:
    """latest.json pointing behind (or at garbage) does not change what latest is."""
    root = str(tmp_path / "stats")
    for i in range(3):
        manifest.publish(StatisticsStore(str(root)), _version(i, f"run{i}"))
    Path(root, layout.LATEST).write_text(json.dumps({"version": 1}))
    assert manifest.load_version(StatisticsStore(str(root))).version == 3
    Path(root, layout.LATEST).write_text("{trunc")
    assert manifest.load_version(StatisticsStore(str(root))).version == 3


@pytest.mark.parametrize("damage", ["truncated", "empty", "hand-edited", "not an object"])
def test_a_damaged_manifest_is_skipped_reported_and_never_blocks_a_publish(
    tmp_path: Path, damage: str
) -> None:
    root = str(tmp_path / "stats")
    manifest.publish(StatisticsStore(str(root)), _version(1, "one"))
    manifest.publish(StatisticsStore(str(root)), _version(2, "two"))
    path = Path(layout.absolute(root, layout.version_path(2)))
    text = path.read_text()
    path.write_text(
        {
            "truncated": text[: len(text) // 2],
            "empty": "",
            "hand-edited": json.dumps({"version": 2, "columns": "oops"}),
            "not an object": "[1, 2]",
        }[damage]
    )
    with pytest.raises(CorruptStatisticsError) as info:
        manifest.load_version(StatisticsStore(str(root)), 2)
    message = str(info.value)
    assert str(path) in message and "\n" not in message and "delete the file" in message
    latest = manifest.load_version(
        StatisticsStore(str(root))
    )  # falls back to the newest good version
    assert (latest.version, latest.skipped_versions) == (1, [2])
    assert "skipped_versions" not in latest.to_json()
    assert (
        manifest.publish(StatisticsStore(str(root)), _version(3, "three")) == 3
    )  # the next number, not blocked
    assert manifest.load_version(StatisticsStore(str(root))).version == 3
    assert manifest.load_version(StatisticsStore(str(root))).skipped_versions == []
    plan = expire.plan_expiry(StatisticsStore(str(root)), None, retain_last=1, orphan_age_seconds=0)
    assert plan.damaged_versions == [2] and 2 in plan.versions_removed
    expire.apply_expiry(StatisticsStore(str(root)), plan)
    assert manifest.version_numbers(StatisticsStore(str(root))) == [1, 3]


def test_every_manifest_damaged_is_one_line(tmp_path: Path) -> None:
    root = str(tmp_path / "stats")
    manifest.publish(StatisticsStore(str(root)), _version(1, "one"))
    Path(layout.absolute(root, layout.version_path(1))).write_text('{"version": 1, "part')
    with pytest.raises(CorruptStatisticsError, match=r"v00000001\.json is damaged"):
        manifest.load_version(StatisticsStore(str(root)))
    assert manifest.publish(StatisticsStore(str(root)), _version(2, "two")) == 2


class _FullDisk:
    """A local file that takes ``room`` bytes and then fails as a full disk does."""

    def __init__(self, path: str, room: int) -> None:
        self._file = open(path, "wb")  # noqa: SIM115
        self._room = room

    def write(self, data: bytes) -> int:
        data = bytes(data)
        if len(data) > self._room:
            self._file.write(data[: self._room])
            self._room = 0
            raise OSError(errno.ENOSPC, "No space left on device")
        self._room -= len(data)
        return self._file.write(data)

    def __getattr__(self, name: str) -> object:
        return getattr(self._file, name)

    def __enter__(self) -> _FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()


def _disk_full_under(monkeypatch: pytest.MonkeyPatch, part: str, room: int = 10) -> None:
    opener = handle._open_local

    def open_local(path: str) -> object:
        return _FullDisk(path, room) if part in path else opener(path)

    monkeypatch.setattr(handle, "_open_local", open_local)


def _one_line_no_space(exc: BaseException, name: str) -> None:
    message = str(exc)
    assert isinstance(exc, StorageError) and "\n" not in message
    assert "no space left on device" in message and name in message


def test_full_disk_while_publishing_leaves_the_previous_version_and_no_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = str(tmp_path / "stats")
    manifest.publish(StatisticsStore(str(root)), _version(1, "one"))
    _disk_full_under(monkeypatch, "versions")
    with pytest.raises(StorageError) as info:
        manifest.publish(StatisticsStore(str(root)), _version(2, "two"))
    _one_line_no_space(info.value, "v00000002.json")
    assert manifest.version_numbers(StatisticsStore(str(root))) == [1]
    assert manifest.load_version(StatisticsStore(str(root))).run_id == "one"
    assert not list(Path(root, "versions").glob("*.tmp"))
    monkeypatch.undo()
    assert (
        manifest.publish(StatisticsStore(str(root)), _version(2, "two")) == 2
    )  # space again: publishes


def test_full_disk_while_writing_table_level_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer every task (and the table-level reduction) uses: one line naming the
    file, and no partial file left behind."""
    import pyarrow as pa

    from lakestats.stats.accumulator import ColumnAccumulator
    from lakestats.stats.leaves import leaves_of

    table = pa.table({"n": [1, 2, 2, 3]})
    [leaf] = leaves_of(table.schema)
    acc = ColumnAccumulator(leaf, [])
    acc.observe(table.column("n"))
    result = acc.finalize(10, 100)
    files = {k: layout.absolute(str(tmp_path), v) for k, v in layout.table_files("run").items()}
    _disk_full_under(monkeypatch, "table", room=100)
    with pytest.raises(StorageError) as info:
        writer.write_partition([result], [], 10, files, StatisticsStore(str(tmp_path)))
    _one_line_no_space(info.value, "table")
    assert not [p for p in (tmp_path / "table").rglob("*") if p.is_file()]


def test_expire_removes_stale_tmp_files_and_keeps_young_ones(tmp_path: Path) -> None:
    root = tmp_path / "stats"
    manifest.publish(StatisticsStore(str(root)), _version(1, "one"))
    old = [
        root / "versions" / "v00000002.json.0a1b.tmp",
        root / "latest.json.0a1b.tmp",
        root / "_staging" / "run" / "state-0",
    ]
    young = root / "versions" / "v00000003.json.ffff.tmp"
    for path in [*old, young]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"partial")
    for path in old:
        os.utime(path, (time.time() - 7200, time.time() - 7200))
    plan = expire.plan_expiry(StatisticsStore(str(root)), None, retain_last=1)
    assert sorted(plan.files_removed) == sorted(str(p.relative_to(root)) for p in old)
    expire.apply_expiry(StatisticsStore(str(root)), plan)
    assert not any(p.exists() for p in old) and young.exists()
    assert manifest.load_version(StatisticsStore(str(root))).version == 1


def _fails_one_line(capsys: pytest.CaptureFixture, args: list[str], text: str) -> str:
    code = cli.main(args)
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code != 0 and captured.out == "", captured
    assert len(lines) == 1 and lines[0].startswith("lakestats: error: "), captured.err
    assert text in lines[0], lines[0]
    return lines[0]


def test_a_stats_root_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    table = tmp_path / "t"
    table.mkdir()
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"n": [1]}), table / "0.parquet")
    root = tmp_path / "stats-file"
    root.write_text("not a directory")
    for command in (["history"], ["expire"], ["show"], ["partitions", "--json"]):
        _fails_one_line(
            capsys,
            [command[0], str(table), "--stats-root", str(root), *command[1:]],
            "is not a directory",
        )
    with pytest.raises(StorageError):
        manifest.version_numbers(StatisticsStore(str(root)))


def _refused_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again: connections to it are refused


def test_an_s3_endpoint_that_refuses_connections_is_one_line_quickly(
    capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{_refused_port()}")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    table = "s3://lakestats-test/tables/t"
    for args in (
        ["history", table, "--json"],
        ["expire", table],
        ["show", table, "--json"],
        ["partitions", table, "--json"],
        ["analyze", table],
        # a local table (it exists: a missing one is its own error) with its root on S3
        ["history", str(tmp_path), "--stats-root", f"{table}/_lakestats"],
    ):
        start = time.monotonic()
        line = _fails_one_line(capsys, args, "check the endpoint (AWS_ENDPOINT_URL)")
        assert "s3://lakestats-test" in line
        assert time.monotonic() - start < 30, args
    options = fs.S3Options.from_env()
    with pytest.raises(StorageError, match="check the endpoint"):
        StatisticsStore(f"{table}/_lakestats", options).create_exclusive(
            f"{table}/_lakestats/versions/v00000001.json", b"{}")
    with pytest.raises(StorageError, match="check the endpoint"):
        manifest.publish(StatisticsStore(f"{table}/_lakestats"), _version(1, "x"), options)


def test_no_statistics_is_still_its_own_error(tmp_path: Path) -> None:
    with pytest.raises(StatisticsNotFoundError, match="no statistics under"):
        manifest.load_version(StatisticsStore(str(tmp_path / "nothing")))
