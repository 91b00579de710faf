"""Few-valued string columns read dictionary-encoded (``PartitionReader.read_encoded``) and
counted by code: the same rows as pyarrow's own reading, the same value counts as
DuckDB's, the same statistics and column-group counts as the decoded values give, for
files that store a column with a dictionary and files that do not, in one partition."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakestats.formats.delta import DeltaTableFormat
from lakestats.formats.parquet_dir import ParquetTableFormat, few_valued
from lakestats.stats.accumulator import ColumnAccumulator
from lakestats.stats.column_groups import GroupAccumulator
from lakestats.stats.leaves import leaf_array, leaves_of
from lakestats.store import group_files

ROWS = 6_000


def _rows(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    region = rng.choice(["eu", "us", "sa", "ap"], ROWS, p=[0.55, 0.3, 0.1, 0.05]).astype(object)
    region[rng.random(ROWS) < 0.1] = None
    return pa.table({
        "region": pa.array(region, pa.string()),
        "tier": pa.array(np.where(region == "eu", "gold", rng.choice(["gold", "silver"], ROWS))),
        "code": pa.array([bytes([b]) for b in rng.integers(0, 6, ROWS)], pa.binary()),
        "wide": pa.array(rng.choice(["x", "y", None], ROWS), pa.large_string()),
        "note": pa.array([f"note {i} of {seed}" for i in range(ROWS)]),  # all distinct
        "n": pa.array(rng.integers(0, 5, ROWS)),
        "tags": pa.array([["a"] * int(k) for k in rng.integers(0, 3, ROWS)]),
    })


@pytest.fixture(scope="module")
def table_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two partitions of three files each; the second file of each is written without
    dictionaries, so a partition's files disagree on how they store the strings."""
    root = tmp_path_factory.mktemp("encoded")
    for p in range(2):
        directory = root / f"p={p}"
        directory.mkdir()
        for f in range(3):
            pq.write_table(_rows(10 * p + f), directory / f"f{f}.parquet",
                           use_dictionary=f != 1, row_group_size=2_000)
    return root


def test_few_valued_columns_are_the_small_dictionaries(table_dir: Path) -> None:
    assert few_valued(pq.read_metadata(table_dir / "p=0" / "f0.parquet")) == [
        "code", "region", "tier", "wide"]  # not the distinct notes, ints or lists
    assert few_valued(pq.read_metadata(table_dir / "p=0" / "f1.parquet")) == []


def test_a_dictionary_the_writer_gave_up_is_read_decoded(tmp_path: Path) -> None:
    """Past its dictionary page limit a writer goes on in plain pages: such a column is
    not counted by code (pyarrow would encode every plain value again)."""
    rng = np.random.default_rng(7)
    values = np.array([f"{i:040d}" for i in range(2_000)], dtype=object)
    rows = pa.table({"s": pa.array(values[rng.integers(0, 2_000, 200_000)], pa.string()),
                     "few": pa.array(values[rng.integers(0, 4, 200_000)], pa.string())})
    path = tmp_path / "gave_up.parquet"
    pq.write_table(rows, path, dictionary_pagesize_limit=8_192)
    chunk = pq.read_metadata(path).row_group(0).column(0)
    assert chunk.has_dictionary_page and "PLAIN" in chunk.encodings
    assert few_valued(pq.read_metadata(path)) == ["few"]


@pytest.mark.parametrize("files", [[0], [0, 2], [0, 1, 2]])
def test_encoded_rows_equal_pyarrow_s(table_dir: Path, files: list[int]) -> None:
    table = ParquetTableFormat(str(table_dir))
    plan = next(p for p in table.plan() if p.name == "p=0")
    part = table.slices(plan, 1 << 40)[0]
    part = type(part)(part.partition, tuple(part.files[i] for i in files))
    encoded = table.reader().read_encoded(part, None)
    truth = pa.concat_tables(
        [pq.read_table(table_dir / "p=0" / f"f{i}.parquet") for i in files])
    for name in ("region", "tier", "code", "wide"):
        column = encoded.column(name)
        if files == [0, 1, 2]:  # one file without dictionaries: decoded for all
            assert not pa.types.is_dictionary(column.type)
        else:
            assert pa.types.is_dictionary(column.type)
            assert all(c.dictionary.equals(column.chunk(0).dictionary) for c in column.chunks)
        decoded = column.cast(truth.schema.field(name).type)
        assert decoded.equals(truth.column(name)), name
    assert encoded.column("note").equals(truth.column("note"))


def test_counted_by_code_as_duckdb_counts(table_dir: Path) -> None:
    table = ParquetTableFormat(str(table_dir))
    plan = next(p for p in table.plan() if p.name == "p=1")
    part = table.slices(plan, 1 << 40)[0]
    part = type(part)(part.partition, (part.files[0], part.files[2]))
    encoded = table.reader().read_encoded(part, None)
    decoded = table.reader().read(part, None)
    con = duckdb.connect()
    con.register("t", decoded)
    for leaf in leaves_of(encoded.schema):
        if leaf.name not in ("region", "tier", "code", "wide", "note", "n"):
            continue
        by_code, by_value = ColumnAccumulator(leaf), ColumnAccumulator(leaf)
        by_code.observe(leaf_array(encoded, leaf))
        by_value.observe(leaf_array(decoded, leaf))
        values, counts = by_code.value_counts()
        ours = dict(zip(values.to_pylist(), counts.tolist(), strict=True))
        truth = dict(con.execute(
            f'SELECT "{leaf.name}", count(*) FROM t WHERE "{leaf.name}" IS NOT NULL '
            "GROUP BY ALL").fetchall())
        assert ours == truth, leaf.name
        assert by_code.finalize(32, 3).row == by_value.finalize(32, 3).row, leaf.name
    leaves = {leaf.name: leaf for leaf in leaves_of(encoded.schema)}
    for columns in [("region", "tier"), ("region", "code", "wide")]:
        rows = []
        for source in (encoded, decoded):
            group = GroupAccumulator(columns, tuple(leaves[c] for c in columns))
            group.observe(source)
            rows.append(group_files.groups_table([group.finalize(3)]))
        assert rows[0].equals(rows[1]), columns
        joint = GroupAccumulator(columns, tuple(leaves[c] for c in columns))
        joint.observe(encoded)
        listed = {tuple(r[:-1]): r[-1] for r in zip(
            *[joint.joint().column(k).to_pylist() for k in ("k0", "k1", "k2")[:len(columns)]],
            joint.joint().column("count").to_pylist(), strict=True)}
        truth = con.execute(f"SELECT count(*) FROM (SELECT DISTINCT {', '.join(columns)} "
                            "FROM t)").fetchone()[0]
        assert len(listed) == truth and sum(listed.values()) == decoded.num_rows, columns


def test_delta_files_read_encoded(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    rows = _rows(5).drop_columns(["tags"])
    deltalake.write_deltalake(str(tmp_path), rows)
    table = DeltaTableFormat(str(tmp_path))
    part = table.slices(table.plan()[0], 1 << 40)[0]
    encoded = table.reader().read_encoded(part, None)
    decoded = table.reader().read(part, None)
    assert decoded.equals(rows.cast(decoded.schema))
    dictionaries = [n for n in encoded.column_names
                    if pa.types.is_dictionary(encoded.schema.field(n).type)]
    assert dictionaries, "delta-rs writes dictionaries: the few-valued columns come encoded"
    for name in encoded.column_names:
        assert encoded.column(name).cast(decoded.schema.field(name).type).equals(
            decoded.column(name)), name
