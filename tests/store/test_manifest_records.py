"""Typed manifest records: a manifest reads back into the same bytes, and one written by a
newer lakestats (a higher ``format_version``) is refused in one line, by the store, the
lookups and the command line, instead of being read as if this code knew its fields."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import lakestats.api as ls
from lakestats import cli
from lakestats.options import AnalyzeOptions
from lakestats.store import layout, manifest
from lakestats.store.handle import StatisticsStore
from lakestats.store.schemas import FORMAT_VERSION


def _publish(root: Path) -> int:
    version = manifest.Version(
        version=0,
        created_at="2026-11-23T00:00:00+00:00",
        table=manifest.TableRef("parquet", "t", str(root)),
        snapshot_id=None,
        schema_id=None,
        options={"columns": None, "bins": 10, "max_frequencies": 5, "max_slice_bytes": 1},
        columns=[{"name": "n", "type": "int64"}],
        partitions=[
            manifest.PartitionEntry(
                path="p=1", name="p=1", values={"p": 1}, row_count=3, size_bytes=10,
                files={"statistics": "partitions/p=1/r/statistics.parquet"},
                fingerprint="f", run_id="r", file_sizes={"statistics": 100},
            )
        ],
        run_id="r",
        extra={"custom_statistics": []},
    )
    return manifest.publish(StatisticsStore(str(root)), version)


def test_a_manifest_reads_back_into_the_same_bytes(tmp_path: Path) -> None:
    number = _publish(tmp_path)
    path = tmp_path / layout.version_path(number)
    text = path.read_text(encoding="utf-8")
    version = manifest.Version.from_json(text)
    assert version.table == manifest.TableRef("parquet", "t", str(tmp_path))
    assert version.to_json() == text
    assert version.analyze_options == AnalyzeOptions(bins=10, max_frequencies=5, max_slice_bytes=1)
    version.options = {**version.options, "from_sample": True}  # a sampled version's record
    assert version.analyze_options is None
    assert json.loads(text)["table"] == {
        "format": "parquet", "identifier": "t", "location": str(tmp_path)
    }


def test_a_newer_format_version_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    stats = tmp_path / "stats"
    _publish(stats)
    newer = _publish(stats)
    path = stats / layout.version_path(newer)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["format_version"] = FORMAT_VERSION + 1
    path.write_text(json.dumps(data), encoding="utf-8")
    expected = (
        f"statistics version file {path} was written by a newer lakestats (format "
        f"{FORMAT_VERSION + 1}; this one reads up to {FORMAT_VERSION}); upgrade lakestats"
    )
    with pytest.raises(manifest.NewerFormatError) as info:
        manifest.load_version(StatisticsStore(str(stats)))  # never skipped as if it were damaged
    assert str(info.value) == expected
    with pytest.raises(manifest.NewerFormatError, match=re.escape(expected)):
        ls.open_table(str(tmp_path), stats_root=str(stats)).history()
    assert (
        manifest.load_version(StatisticsStore(str(stats)), newer - 1).version == newer - 1
    )  # older: read
    assert cli.main(["history", str(tmp_path), "--stats-root", str(stats)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"lakestats: error: {expected}"]


@pytest.mark.parametrize(
    "table", [{}, {"format": "parquet", "identifier": "t", "location": "/x", "catalog": "c"}]
)
def test_a_table_reference_with_fewer_or_more_keys_reads(tmp_path: Path, table: dict) -> None:
    """Manifests written by other tools (or by hand) may name less of their table, or more:
    the known keys are read, the rest left out, and the version is still served."""
    number = _publish(tmp_path)
    path = tmp_path / layout.version_path(number)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["table"] = table
    path.write_text(json.dumps(data), encoding="utf-8")
    version = manifest.load_version(StatisticsStore(str(tmp_path)), number)
    assert version.table == manifest.TableRef(
        table.get("format", ""), table.get("identifier", ""), table.get("location", "")
    )
    assert [p.name for p in version.partitions] == ["p=1"]


def test_outside_roots_is_outside_root_path_by_path() -> None:
    """The one-scan check of a manifest's paths refuses exactly what ``outside_root``
    refuses, path by path."""
    import itertools
    import random

    from lakestats.store import layout

    pieces = ["a", "p=1", "x.parquet", ".", "..", "", "/", "~", "\\", ":", "c:", "s3://b",
              "\n", "..a", "a..", ".a", "a.", "%2F", "é", " "]
    pick = random.Random(5)
    cases = ["".join(c) for c in itertools.product(pieces, repeat=2)]
    cases += ["/".join(pick.choice(pieces) for _ in range(pick.randint(1, 4)))
              for _ in range(3000)]
    cases += [None, 7, b"a"]
    for path in cases:
        assert layout.outside_roots(["ok/a.parquet", path, "p=2/b"]) == (
            [path] if layout.outside_root(path) else []
        ), repr(path)
    clean = [c for c in cases if not layout.outside_root(c)]
    assert layout.outside_roots(clean) == []
    assert layout.outside_roots(cases) == [c for c in cases if layout.outside_root(c)]


def test_partition_entries_decode_as_their_constructor_would(tmp_path: Path) -> None:
    """The fast decode (orjson, the decoded dicts adopted as the entries' attributes) gives
    the entries ``PartitionEntry(**p)`` gives, fills the defaults of keys a manifest leaves
    out (each entry its own dict), refuses the entries the constructor refuses, and reads
    what only ``json`` reads (NaN)."""
    from lakestats.errors import CorruptStatisticsError

    number = _publish(tmp_path)
    path = tmp_path / layout.version_path(number)
    data = json.loads(path.read_text(encoding="utf-8"))
    full = data["partitions"][0]
    short = {k: full[k] for k in ("path", "name", "values", "row_count", "size_bytes", "files")}
    data["partitions"] = [full, {**short, "path": "p=2", "name": "p=2"}, dict(short)]
    data["options"] = {**data["options"], "ratio": float("nan")}  # json writes NaN
    path.write_text(json.dumps(data), encoding="utf-8")
    version = manifest.read_version(StatisticsStore(str(tmp_path)), number)
    expected = [manifest.PartitionEntry(**p) for p in json.loads(json.dumps(data["partitions"]))]
    assert version.partitions == expected
    assert version.partitions[1].file_sizes == {} and version.partitions[1].fingerprint == ""
    assert version.partitions[1].file_sizes is not version.partitions[2].file_sizes
    assert version.options["ratio"] != version.options["ratio"]  # NaN, read by json
    for damaged in ({**full, "unknown": 1}, {k: v for k, v in full.items() if k != "files"},
                    ["p=1"]):
        data["partitions"] = [full, damaged]
        path.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(CorruptStatisticsError):
            manifest.read_version(StatisticsStore(str(tmp_path)), number)
