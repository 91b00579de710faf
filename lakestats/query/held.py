"""One column's rows of the version's partition histograms (frequencies and histograms of
ordered columns), held by partition position: read on first need, for the partitions the
estimator said it will look at (``expect``), with the point counts of values over them."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.stats.arrays import binary_array, binary_values, bool_array, int64_array, numbers
from lakestats.store.part_keys import int_keys, ints_as_keys
from lakestats.store.partition_histograms import PartitionHistograms, key_ints

LISTED_ROWS = 1_000
"""Rows of a column up to which a held part (or an index column) converts them all at
once."""
FREQUENCY_FIELDS = [
    "frequencies_count",
    "frequencies_truncated",
    "frequencies_min",
    "frequency_values",
    "frequency_ints",
    "frequency_counts",
]
HISTOGRAM_FIELDS = ["histogram_lower", "histogram_width", "histogram_counts"]
"""What the estimator reads from the partition histograms: the frequency fields
and the histogram fields of a column are read separately, each only when needed."""


WHOLE_GROUPS_PARTITIONS = 1000
"""Up to this many partitions, a held column's load keeps every row of the row groups it
decodes (``_HeldPart``); above, the rows kept would make each new point count (which
scans the loaded rows) cost more than the reads it saves."""


class _HeldPart:
    """Some fields of one column's rows of the partition histograms, by partition
    position, read on first need: for the partitions the estimator said it will look at
    (``expected``), or for all of them, and, for tables of up to
    ``WHOLE_GROUPS_PARTITIONS`` partitions, the column's other rows in the row groups
    that read decodes (a resident estimator's later predicates need them, for free now)."""

    def __init__(
        self, source: PartitionHistograms, column_index: int, expected: np.ndarray,
        fields: list[str], width: int = 8,
    ) -> None:
        self.source = source
        self.column_index = column_index
        self.width = width  # of the keys its int lists hold (``key_width``)
        self.expected = expected
        self.fields = fields
        self.lists = [f for f in fields if f.endswith(("_values", "_ints", "_counts"))]
        self.slot = np.full(len(expected), -1, dtype=np.int64)
        self.loaded = np.zeros(len(expected), dtype=bool)
        self.tables: list[tuple[pa.Table, dict[str, np.ndarray]]] = []
        self.scalars: dict[int, dict[str, list]] = {}
        self.lock = threading.Lock()

    def load(self, positions: np.ndarray) -> None:
        with self.lock:
            wanted = positions[~self.loaded[positions]]
            if not len(wanted):
                return
            whole = len(self.loaded) <= WHOLE_GROUPS_PARTITIONS
            table = self.source.read(
                self.column_index, wanted, self.fields, whole_groups=whole
            ).combine_chunks()
            ids = numbers(table.column("partition_id"))
            fresh = ~self.loaded[ids]  # the groups' other rows: those not loaded before
            if not fresh.all():
                table = table.filter(bool_array(fresh))
                ids = ids[fresh]
            offsets = {
                name: numbers(table.column(name).chunk(0).offsets)
                if table.num_rows else np.zeros(1, np.int32)
                for name in self.lists
            }
            base = sum(t.num_rows for t, _ in self.tables)
            self.tables.append((table, offsets))
            self.slot[ids] = base + np.arange(len(ids))
            self.loaded[wanted] = True
            self.loaded[ids] = True

    def ensure(self, position: int) -> None:
        if not self.loaded[position]:
            if self.expected[position]:
                self.load(np.flatnonzero(self.expected))
            else:
                self.load(np.arange(len(self.loaded)))

    def row(self, position: int) -> HeldRow | None:
        """The partition's row, or None when the file has none for it."""
        self.ensure(position)
        j = int(self.slot[position])
        if j < 0:
            return None
        for k, (table, offsets) in enumerate(self.tables):
            if j < table.num_rows:
                return HeldRow(table, offsets, j, self._scalars(k, table, offsets),
                               self.width)
            j -= table.num_rows
        return None

    def _scalars(self, k: int, table: pa.Table, offsets: dict) -> dict[str, list] | None:
        """The ``k``-th loaded table's non-list fields as Python lists (made once), when
        it has at most ``LISTED_ROWS`` rows."""
        if table.num_rows > LISTED_ROWS:
            return None
        found = self.scalars.get(k)
        if found is None:
            found = self.scalars[k] = {
                f: table.column(f).to_pylist() for f in table.column_names if f not in offsets
            }
        return found


class _Held:
    """One column of the partition histograms: its frequency and histogram fields."""

    def __init__(self, source: PartitionHistograms, column_index: int, partitions: int,
                 width: int = 8) -> None:
        self.expected = np.zeros(partitions, dtype=bool)
        self.generation = 0  # bumped when ``expected`` grows (point counts depend on it)
        self.width = width  # of the keys the int lists hold (``key_width``)
        self.frequencies = _HeldPart(source, column_index, self.expected, FREQUENCY_FIELDS,
                                     width)
        self.histograms = _HeldPart(source, column_index, self.expected, HISTOGRAM_FIELDS)
        self._flat: dict[int, tuple[np.ndarray, list[tuple]]] = {}

    def expect(self, positions: np.ndarray) -> None:
        if not self.expected[positions].all():
            self.expected[positions] = True
            self.generation += 1

    def point_counts(self, keys: Sequence[bytes], positions: np.ndarray) -> np.ndarray:
        """Per partition, the listed count of ``keys`` summed (0 when none is listed) for
        the partitions at ``positions``; -1 elsewhere."""
        part = self.frequencies
        part.load(positions)
        out = np.full(len(self.expected), -1, dtype=np.int64)
        binary = binary_array(list(keys))
        eight = int64_array(key_ints(keys, self.width))
        for k, (table, _) in enumerate(part.tables):
            if not table.num_rows:
                continue
            ids, flat = self._flattened(k, table)
            sums = np.zeros(table.num_rows, dtype=np.int64)
            for (values, rows, counts), wanted in zip(flat, (binary, eight), strict=True):
                hit = numbers(pc.is_in(values, wanted), False, bool)
                np.add.at(sums, rows[hit], counts[hit])
            out[ids] = sums
        return out

    def _flattened(self, k: int, table: pa.Table) -> tuple[np.ndarray, list[tuple]]:
        """The ``k``-th loaded table of frequency rows, flattened once: its partition ids
        and, per value list (binary values, 8-byte ints), the values, their rows and
        their counts (a resident estimator counts new keys in the same rows)."""
        if k not in self._flat:
            ids = numbers(table.column("partition_id"))
            counts = table.column("frequency_counts").chunk(0)
            listed = numbers(pc.list_flatten(counts), 0, np.int64)
            lengths = numbers(pc.list_value_length(counts), 0)
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
            flat = []
            for name in ("frequency_values", "frequency_ints"):
                lists = table.column(name).chunk(0)
                rows = numbers(pc.list_parent_indices(lists))
                # each key's count: its row's first count + its place in the row
                within = np.arange(len(rows)) - np.searchsorted(rows, rows)
                at = starts[rows] + within
                flat.append((pc.list_flatten(lists), rows, listed[at]))
            self._flat[k] = (ids, flat)
        return self._flat[k]


class HeldRow:
    """Some fields of one partition x column row of the partition histograms."""

    def __init__(
        self,
        table: pa.Table,
        offsets: dict[str, np.ndarray],
        j: int,
        scalars: dict[str, list] | None = None,
        width: int = 8,
    ) -> None:
        self.table, self.offsets, self.j, self.width = table, offsets, j, width
        if scalars is not None:
            self.fields = {f: values[j] for f, values in scalars.items()}
        else:
            self.fields = {
                f: table.column(f)[j].as_py() for f in table.column_names if f not in offsets
            }

    def is_valid(self, name: str) -> bool:
        return self.table.column(name)[self.j].is_valid

    def _list(self, name: str) -> pa.Array:
        start, stop = self.offsets[name][self.j : self.j + 2]
        return self.table.column(name).chunk(0).values.slice(int(start), int(stop - start))

    def frequency_rows(self) -> tuple[list[bytes], np.ndarray]:
        if "frequency_ints" in self.offsets and self.is_valid("frequency_ints"):
            ints = numbers(self._list("frequency_ints"))
            values = ints_as_keys(ints, self.width)
        else:
            values = binary_values(self._list("frequency_values"))
        return values, numbers(self._list("frequency_counts"), 0, np.int64)

    def frequency_arrays(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``frequency_rows`` without a Python object per value: the keys as one NumPy
        array of fixed-width bytes (``S{width}``, compared as ``memcmp``), or None when
        the keys differ in width or have nulls (``frequency_rows`` then)."""
        counts = numbers(self._list("frequency_counts"), 0, np.int64)
        if "frequency_ints" in self.offsets and self.is_valid("frequency_ints"):
            ints = numbers(self._list("frequency_ints"), 0, np.int64)
            return int_keys(ints, self.width), counts
        return fixed_width(self._list("frequency_values")), counts

    def histogram_counts(self) -> np.ndarray:
        counts = self._list("histogram_counts")
        return numbers(counts, 0, np.int64)



def fixed_width(array: pa.Array) -> np.ndarray | None:
    """A null-free binary array whose values all have one width as a NumPy ``S{width}``
    array over its buffer, else None."""
    if array.null_count or array.type != pa.binary() or not len(array):
        return None
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[
        array.offset : array.offset + len(array) + 1
    ]
    width = int(offsets[1] - offsets[0])
    if width <= 0 or buffers[2] is None or not np.all(np.diff(offsets) == width):
        return None
    data = np.frombuffer(buffers[2], dtype=np.uint8)[int(offsets[0]) : int(offsets[-1])]
    return data.view(f"S{width}")
