"""Table-level frequencies as layers: a base file and deltas, merged on read.

An incremental ``analyze --exact`` that writes a delta rank layer (``store/ranks.py``) does
not rewrite the table frequencies of the columns that list every value (scenarios #2 and
#3: millions of rows). It writes ``table/<run>/frequency_delta.parquet`` (the table
frequencies schema) with, per such column, the values whose count changed: their new
count, or 0 for a value no longer held. The version's ``extra["exact"]["frequency_layers"]``
names the files, base first (the table ``frequencies.parquet`` of the version that last
rewrote them whole), and the columns; the version's own table file keeps no rows of them.

A read of such a column takes, per value, the newest layer that has it; ``MergedColumn``
yields the rows in the file's order (decreasing count, then key) chunk by chunk, so a
top-k read stops early as it does on one file: each base chunk, without the values a
delta overrides, is merged with the deltas' rows that sort before its last row.

``pyarrow.compute`` is imported where a merge needs it: the reader imports this module, and
a partition lookup from the CLI stays lean (``tests/cli/test_lean_imports.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakestats.stats.arrays import int64_array, integer_array

ORDER = [("frequency", "descending"), ("value", "ascending")]


def delta_file(run_id: str) -> str:
    """Relative path of a run's frequency delta layer."""
    return f"table/{run_id}/frequency_delta.parquet"


@dataclass(frozen=True)
class FrequencyLayers:
    """A version's frequency layers: ``files`` (base first, then the deltas, oldest first)
    and the ``columns`` (positions) they hold."""

    files: tuple[str, ...]
    columns: frozenset[int]

    @classmethod
    def of(cls, version: object) -> FrequencyLayers | None:
        """The layers a version records (None: its table file holds every column)."""
        extra = getattr(version, "extra", None) or {}
        held = (extra.get("exact") or {}).get("frequency_layers")
        if not held:
            return None
        return cls(tuple(held["files"]), frozenset(int(c) for c in held["columns"]))

    def to_json(self) -> dict[str, object]:
        return {"files": list(self.files), "columns": sorted(self.columns)}


def layers_of(version: object, column: int) -> FrequencyLayers | None:
    """The version's layers when ``column`` is one of them, else None."""
    layers = FrequencyLayers.of(version)
    return layers if layers is not None and column in layers.columns else None


def _column_rows(
    handle: pq.ParquetFile, column: int, fields: list[str], backwards: bool = False
) -> Iterator[pa.Table]:
    """The column's rows of one frequencies file, row group by row group (its rows are
    grouped by column, then by decreasing count and key), the last group first when
    ``backwards``."""
    import pyarrow.compute as pc

    names = handle.schema_arrow.names
    position = names.index("column_index")
    wanted = [f for f in fields if f in names]
    groups = range(handle.metadata.num_row_groups)
    for g in reversed(groups) if backwards else groups:
        stats = handle.metadata.row_group(g).column(position).statistics
        if stats is not None and stats.has_min_max and not stats.min <= column <= stats.max:
            continue
        table = handle.read_row_group(g, columns=list(dict.fromkeys([*wanted, "column_index"])))
        index = table.column("column_index")
        table = table.filter(pc.equal(index, integer_array([column], index.type)[0])).select(wanted)
        if table.num_rows:
            yield table


class MergedColumn:
    """One layered column of a version: its rows merged over the layers on read."""

    def __init__(
        self,
        open_file: Callable[[str], pq.ParquetFile],
        layers: FrequencyLayers,
        column: int,
        fields: list[str],
    ) -> None:
        import pyarrow.compute as pc

        self.column = column
        self._base = open_file(layers.files[0])
        names = self._base.schema_arrow.names
        self.fields = [f for f in dict.fromkeys(["value", "frequency", *fields]) if f in names]
        newest: list[pa.Table] = []
        for relative in reversed(layers.files[1:]):  # the newest layer wins a value
            rows = list(_column_rows(open_file(relative), column, self.fields))
            if rows:
                newest.append(pa.concat_tables(rows).cast(self._schema_of(rows[0].column_names)))
        overrides = (
            pa.concat_tables(newest) if newest else self._schema_of(self.fields).empty_table()
        )
        if len(newest) > 1:  # keep each value's first (newest) row
            first = _first_occurrences(overrides.column("value").combine_chunks())
            overrides = overrides.take(int64_array(first))
        self.override_keys = overrides.column("value").combine_chunks()
        self.overrides = overrides
        live = overrides.filter(pc.greater(overrides.column("frequency"), 0))
        self._live = live.sort_by(ORDER)

    def _schema_of(self, names: list[str]) -> pa.Schema:
        """The base file's schema of ``names`` (a delta is cast to it: an older base may
        differ in types)."""
        base = self._base.schema_arrow
        return pa.schema([base.field(f) for f in names])

    def chunks(self) -> Iterator[pa.Table]:
        """The column's rows in (decreasing count, key) order, a chunk at a time."""
        import pyarrow.compute as pc

        live, at = self._live, 0
        negated = -live.column("frequency").to_numpy()  # increasing: searchable
        values = live.column("value")
        for chunk in _column_rows(self._base, self.column, self.fields):
            if len(self.override_keys):
                overridden = pc.is_in(chunk.column("value"), value_set=self.override_keys)
                chunk = chunk.filter(pc.invert(overridden))
            if chunk.num_rows == 0:
                continue
            last_count = chunk.column("frequency")[-1].as_py()
            last_key = chunk.column("value")[-1]
            # the live rows sorting before the chunk's last row: counts above it, then its
            # count's keys up to its key
            above, through = np.searchsorted(negated, [-last_count, -last_count + 1])
            tied = values.slice(int(above), int(through - above))
            before = int(pc.sum(pc.less_equal(tied, last_key)).as_py() or 0)
            stop = max(at, int(above) + before)
            if stop > at:
                chunk = pa.concat_tables([chunk, live.slice(at, stop - at).cast(chunk.schema)])
                chunk = chunk.sort_by(ORDER)
                at = stop
            yield chunk
        if at < live.num_rows:
            yield live.slice(at)

    def smallest(self) -> int:
        """The smallest count listed over the layers (0: none): the deltas' live rows and
        the base's rows no delta overrides, whose last row group of the column is read
        first (its rows are by decreasing count: usually the only one read)."""
        import pyarrow.compute as pc

        live = self._live.column("frequency")
        low = int(live[-1].as_py()) if len(live) else 0
        for chunk in _column_rows(self._base, self.column, ["value", "frequency"], True):
            if len(self.override_keys):
                overridden = pc.is_in(chunk.column("value"), value_set=self.override_keys)
                chunk = chunk.filter(pc.invert(overridden))
            if chunk.num_rows:
                base = int(chunk.column("frequency")[-1].as_py())
                return base if low == 0 else min(low, base)
        return low


def _first_occurrences(values: pa.Array) -> np.ndarray:
    """Positions of each distinct value's first occurrence, in order."""
    import pyarrow.compute as pc

    _, first = np.unique(
        pc.index_in(values, value_set=pc.unique(values)).to_numpy(), return_index=True
    )
    return np.sort(first)
