"""The publish step under faults: a process killed (SIGKILL) at every point of it, and a
publish racing Spark's planner. Every reader sees a whole set of statistics, the one before or
the new one, never a mix: lakestats' own readers (the latest version and its files), Iceberg's
(the Puffin file the table metadata lists: Spark with Iceberg's runtime reads its ``ndv``
properties) and lakestats' Spark component (the newest ``spark/`` file of the snapshot).

A pending version is made by a real analyze whose publish is held back; a child process
(``kill_publish.py``) publishes it and kills itself at the chosen point. Spark 4.1
(``.venv-interop``) is asked after each kill what it plans with, the component on and off:
every distinct count it reports comes from the one file the scan's version names, or from
the one Puffin file the table lists."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lakestats.api as ls
from lakestats import fs
from lakestats.compute.analyze import run
from lakestats.compute.analyze.publish import publish
from lakestats.formats.iceberg import load_catalog
from lakestats.interop import puffin, puffin_file
from lakestats.store import manifest
from lakestats.store.handle import StatisticsStore
from lakestats.store.reader import StatisticsReader
from tests.formats import kill_publish
from tests.formats.spark_reader import MISSING, SparkReader, iceberg

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]
ROWS = 20_000
CHILD = Path(kill_publish.__file__)


def _rows(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "k": pa.array(rng.integers(0, 700, ROWS)),
        "x": pa.array(rng.normal(size=ROWS)),
        "z": pa.array(np.round(rng.exponential(size=ROWS), 3)),
    })


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkReader | None]:
    """The Spark 4.1 session, or None without ``.venv-interop`` and the jars (then lakestats'
    own readers and the table metadata are checked alone)."""
    if MISSING:
        yield None
        return
    spark_reader = SparkReader(tmp_path_factory.mktemp("reader"))
    yield spark_reader
    spark_reader.stop()


def _table(warehouse: Path, name: str, spark) -> ls.Table:
    catalog = load_catalog(warehouse=str(warehouse))
    if ("db",) not in catalog.list_namespaces():
        catalog.create_namespace("db")
    catalog.create_table(f"db.{name}", schema=_rows(0).schema).append(_rows(1))
    table = ls.open_table(f"db.{name}", warehouse=str(warehouse))
    table.analyze(spark=spark, exact=True, bins=30)
    return table


def _pending(table: ls.Table, spark, k: int, monkeypatch: pytest.MonkeyPatch) -> manifest.Version:
    """A version an analyze made and did not publish (its files written, its publish held
    back); exact and estimated distinct counts in turn, so consecutive sets differ."""
    held: list[manifest.Version] = []

    def hold(table_format, root, version, **_: object) -> int:
        held.append(version)
        return 0

    with monkeypatch.context() as patch:
        patch.setattr(run, "publish", hold)
        table.analyze(spark=spark, exact=k % 2 == 0, bins=31 + k)
    [version] = held
    return version


def _listed(warehouse: Path, name: str) -> tuple[str | None, dict[str, int]]:
    """The Puffin file the table metadata lists for its current snapshot, and the ``ndv`` of
    each column as Iceberg's Spark runtime reads it (the blobs' properties)."""
    native = load_catalog(warehouse=str(warehouse)).load_table(f"db.{name}")
    snapshot = native.current_snapshot().snapshot_id
    columns = {f.field_id: f.name for f in native.schema().fields}
    for statistics in native.metadata.statistics:
        if statistics.snapshot_id == snapshot:
            data = fs.read_bytes(statistics.statistics_path)  # there, and whole
            assert len(data) == statistics.file_size_in_bytes
            assert data[:4] == data[-4:] == puffin_file.MAGIC
            return statistics.statistics_path, {
                columns[b.fields[0]]: int(b.properties["ndv"]) for b in statistics.blob_metadata
            }
    return None, {}


def _spark_file(store: StatisticsStore, version: int, snapshot: int) -> dict[str, int]:
    """The distinct counts the Spark component's file of ``version`` holds."""
    text = Path(store.uri, "spark", f"v{version:08d}_{snapshot}.json").read_text()
    columns = json.loads(text)["columns"]
    return {c: int(v["stats"][f"{c}.distinctCount"]) for c, v in columns.items()}


def _views(table: ls.Table, warehouse: Path, name: str, spark_reader: SparkReader | None) -> dict:
    """What each reader sees now, checked whole: lakestats' latest version (readable, its
    Puffin file there), the listed Puffin file, and Spark's plans."""
    store = table.store
    latest = manifest.load_version(store)
    rows = StatisticsReader(store, latest.version).column_statistics(None)
    assert sum(p.row_count for p in latest.partitions) == ROWS
    assert {r["column"]: r["row_count"] for r in rows} == {"k": ROWS, "x": ROWS, "z": ROWS}
    recorded = (latest.extra.get("puffin") or {}).get("path")
    assert recorded and fs.exists(recorded), recorded  # the version's own Puffin file stands
    path, ndv = _listed(warehouse, name)
    views = {"lakestats": latest.version, "run": latest.run_id, "puffin": path, "ndv": ndv}
    if spark_reader is not None:
        seen = spark_reader.ask({"op": "plan", "table": iceberg(warehouse, name)})
        on, off = seen["lakestats"], seen["spark"]
        assert on["counted"] == off["counted"] == ROWS  # the query's own answer
        assert on["row_count"] == ROWS
        version = on["version"]
        assert version is not None, on["explain"]
        # every distinct count from the one file the scan's version names
        assert on["distinct"] == _spark_file(store, version, latest.snapshot_id), version
        assert off["distinct"] == {c: ndv.get(c) for c in off["distinct"]}  # the listed Puffin
        views["component"] = version
    return views


def test_a_publish_killed_at_every_point_leaves_whole_sets(
    spark, reader: SparkReader | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before the kill each reader sees the set it had; after, that one or the new one, as the
    order of the step says: Iceberg's switches with the commit, lakestats' with the version,
    the component's with its file. Nothing is ever half there."""
    warehouse = tmp_path / "warehouse"
    table = _table(warehouse, "killed", spark)
    expected_new = {  # point: which readers see the new set once the child is killed there
        "puffin-temporary": set(),
        "puffin-written": set(),
        "puffin-committed": {"puffin"},
        "version-created": {"puffin", "lakestats"},
        "version-published": {"puffin", "lakestats"},
        "spark-temporary": {"puffin", "lakestats"},
        "spark-written": {"puffin", "lakestats", "component"},
    }
    before = _views(table, warehouse, "killed", reader)
    for k, point in enumerate(kill_publish.POINTS):
        pending = _pending(table, spark, k, monkeypatch)
        spec = tmp_path / f"pending-{k}.json"
        spec.write_text(pending.to_json())
        done = subprocess.run(
            [sys.executable, str(CHILD), point, str(warehouse), "db.killed", str(spec)],
            capture_output=True, text=True, timeout=300, check=False,
        )
        assert done.returncode == -9, (point, done.returncode, done.stderr[-2000:])
        after = _views(table, warehouse, "killed", reader)
        new = expected_new[point]
        assert (after["lakestats"] > before["lakestats"]) == ("lakestats" in new), point
        if "lakestats" in new:
            assert after["run"] == pending.run_id
        assert (after["puffin"] != before["puffin"]) == ("puffin" in new), point
        if reader is not None:
            moved = after["component"] != before["component"]
            assert moved == ("component" in new), point
            if moved:
                assert after["component"] == after["lakestats"], point
        if "lakestats" in new and "puffin" in new:  # the version names the file listed
            latest = manifest.load_version(table.store)
            assert latest.extra["puffin"]["path"] == after["puffin"]
        before = after
    # the temporary file the kill left under spark/ is never read; expire removes it
    spark_dir = Path(table.store.uri, "spark")
    assert [p.name for p in spark_dir.iterdir() if p.name.endswith(".tmp")]
    table.expire(retain_last=100, orphan_age_minutes=0)
    assert not [p.name for p in spark_dir.iterdir() if p.name.endswith(".tmp")]
    # the next analyze publishes over whatever a kill left
    result = table.analyze(spark=spark, exact=True, bins=64)
    final = _views(table, warehouse, "killed", reader)
    assert final["lakestats"] == result.version
    assert final["puffin"] == manifest.load_version(table.store).extra["puffin"]["path"]
    if reader is not None:
        assert final["component"] == result.version


def test_a_failed_version_publish_puts_the_previous_puffin_file_back(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The version cannot be published (here: the store refuses it): the table lists the
    Puffin file it listed before, which is still there, and the new one is deleted."""
    from lakestats.errors import StorageError

    warehouse = tmp_path / "warehouse"
    table = _table(warehouse, "undone", spark)
    before, ndv = _listed(warehouse, "undone")
    pending = _pending(table, spark, 1, monkeypatch)

    def refuse(*_: object, **__: object) -> int:
        raise StorageError("cannot write the version")

    monkeypatch.setattr(manifest, "publish", refuse)
    with pytest.raises(StorageError):
        publish(table.format, table.store, pending, puffin_file=True, engine_files=True)
    assert _listed(warehouse, "undone") == (before, ndv)
    assert before is not None
    folder = Path(before.removeprefix("file://")).parent
    own = [p.name for p in folder.iterdir() if p.name.endswith(puffin.OWN_SUFFIX)]
    assert own == [Path(before).name]


def test_planning_while_analyze_publishes_sees_whole_sets(
    spark, reader: SparkReader | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark plans reads of the table again and again while versions are published one after
    another (two sets, exact and estimated, in turn): no plan fails, and every plan's
    distinct counts are one version's whole set, with the component and without it."""
    if reader is None:
        pytest.skip("no .venv-interop or jars (make interop jars jvm)")
    warehouse = tmp_path / "warehouse"
    table = _table(warehouse, "raced", spark)
    first = _listed(warehouse, "raced")[1]
    sets = [_pending(table, spark, k, monkeypatch) for k in range(2)]
    published: list[int] = []
    failures: list[BaseException] = []
    stop = threading.Event()

    def publisher() -> None:
        try:
            k = 0
            while not stop.is_set():
                version = manifest.Version.from_json(sets[k % 2].to_json())
                published.append(publish(table.format, table.store, version,
                                         puffin_file=True, engine_files=True))
                k += 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    thread = threading.Thread(target=publisher, daemon=True)
    thread.start()
    try:
        seen = reader.ask({"op": "loop", "table": iceberg(warehouse, "raced"), "seconds": 20},
                          timeout=180)
    finally:
        stop.set()
        thread.join(timeout=120)
    assert not failures, failures
    assert not seen["errors"], seen["errors"][:2]
    assert len(published) >= 4 and seen["plans"] >= 10, (len(published), seen["plans"])
    snapshot = manifest.load_version(table.store).snapshot_id
    for view in seen["seen"]["lakestats"]:
        got = view["view"]
        assert got["row_count"] == ROWS
        assert got["distinct"] == _spark_file(table.store, got["version"], snapshot), got
    whole = [first, *(_exact_or_estimated(table, s) for s in sets)]
    for view in seen["seen"]["spark"]:
        assert view["view"]["distinct"] in whole, view
    assert len({v["view"]["version"] for v in seen["seen"]["lakestats"]}) > 1  # it raced


def _exact_or_estimated(table: ls.Table, version: manifest.Version) -> dict[str, int]:
    """The ``ndv`` the Puffin file of ``version``'s set carries, per column."""
    types = puffin.theta_types(table.format, version.snapshot_id)
    blobs, _ = puffin.blobs_of(table.store, version, types, 0)
    names = {int(c["field_id"]): c["name"] for c in version.columns if "field_id" in c}
    return {names[b.fields[0]]: int(b.properties["ndv"]) for b in blobs}



def _statistics_line(explain: str) -> str:
    """The scan's ``Statistics(...)`` in ``EXPLAIN COST``."""
    line = next(line for line in explain.splitlines() if "Statistics(" in line)
    return line[line.index("Statistics(") :]


@pytest.mark.parametrize(
    "damage",
    ["truncated", "not json", "another table's", "another version's", "a bad value",
     "oversized"],
)
def test_a_damaged_or_foreign_file_leaves_sparks_own_estimates(
    spark, reader: SparkReader | None, tmp_path: Path, damage: str
) -> None:
    """A file under ``spark/`` the component cannot use as it is: Spark plans with its own
    estimates (Iceberg's, as with the component off), the query answers right, and one
    warning names the file, however often the table is planned."""
    if reader is None:
        pytest.skip("no .venv-interop or jars (make interop jars jvm)")
    warehouse = tmp_path / "warehouse"
    table = _table(warehouse, "damaged", spark)
    latest = manifest.load_version(table.store)
    spark_dir = Path(table.store.uri, "spark")
    [good] = spark_dir.iterdir()
    content = json.loads(good.read_text())
    # the newest version's name: the file the component picks for the snapshot
    bad = spark_dir / f"v{latest.version + 1:08d}_{latest.snapshot_id}.json"
    if damage == "truncated":
        bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    elif damage == "not json":
        bad.write_bytes(bytes(range(256)) * 10)
    elif damage == "another table's":
        other = _table(warehouse, "other", spark)
        [theirs] = Path(other.store.uri, "spark").iterdir()
        foreign = json.loads(theirs.read_text())
        foreign.update(snapshot_id=latest.snapshot_id, version=latest.version + 1)
        bad.write_text(json.dumps(foreign))
    elif damage == "another version's":
        bad.write_bytes(good.read_bytes())  # says version 1 under version 2's name
    elif damage == "a bad value":
        content["version"] = latest.version + 1
        content["columns"]["x"]["stats"]["x.distinctCount"] = "many"
        bad.write_text(json.dumps(content))
    else:  # one byte over the limit (64 MiB): refused unread (sparse: no disk used)
        with bad.open("wb") as handle:
            handle.truncate((64 << 20) + 1)
    before = len(reader.warnings())
    request = {"op": "plan", "table": iceberg(warehouse, "damaged"), "filters": ["x < -1.0"]}
    for _ in range(2):  # planned again and again: still one warning
        seen = reader.ask(request)
        on, off = seen["lakestats"], seen["spark"]
        assert on["version"] is None
        assert (on["row_count"], on["distinct"], on["filters"]) == (
            off["row_count"], off["distinct"], off["filters"])
        assert _statistics_line(on["explain"]) == _statistics_line(off["explain"])
        assert on["counted"] == ROWS
    warnings = reader.warnings()[before:]
    assert len(warnings) == 1, warnings
    assert bad.name in warnings[0] and "Spark's own estimates" in warnings[0], warnings[0]
    if damage == "oversized":
        assert "over the limit" in warnings[0]
    bad.unlink()  # the good file again: lakestats' statistics
    assert reader.ask(request)["lakestats"]["version"] == latest.version
