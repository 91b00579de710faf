"""Per-column accumulators: observe slices, merge exactly, finalize into statistics.

Everything a partition's statistics need is derived from two exact, mergeable
pieces of state per column: the row/null counts and the **exact value counts** (each
distinct non-null value with its number of occurrences). Distinct count, min, max,
percentiles, moments, lengths, frequencies, histogram and sketches are all computed
from the value counts at ``finalize``, so slices of a large partition merge exactly.
Over 400 lines on purpose: observing, merging and finalizing share one column's state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pat

from lakestats.stats import histogram as hist
from lakestats.stats import keys, sketches, theta
from lakestats.stats.derived_sketches import frequencies_complete
from lakestats.stats.kinds import MOMENT_KINDS, ORDERED_NUMERIC, VALUE_KINDS, Kind, kind_of
from lakestats.stats.leaves import Leaf
from lakestats.stats.percentiles import PERCENTILES, nearest_rank_indices, percentile_names
from lakestats.stats.registry import SummaryStatistic
from lakestats.stats.string_counts import sorted_string_counts, string_value_counts
from lakestats.stats.top_values import most_frequent


@dataclass
class ColumnResult:
    """The finalized statistics of one column of one partition."""

    row: dict[str, object]
    frequency_keys: pa.Array | None = None  # binary keys, in stored order
    frequency_counts: np.ndarray | None = None
    histogram: np.ndarray | None = None  # int64 counts per bin


@dataclass
class ColumnAccumulator:
    leaf: Leaf
    statistics: list[SummaryStatistic] = field(default_factory=list)
    row_count: int = 0
    null_count: int = 0
    _values: list[pa.Array] = field(default_factory=list)
    _counts: list[pa.Array] = field(default_factory=list)
    # the sketch's hash of each value of ``_values[i]`` where counting made it (strings)
    _hashes: list[np.ndarray | None] = field(default_factory=list)
    _lengths: list[np.ndarray] = field(default_factory=list)
    _custom: dict[str, object] = field(default_factory=dict)
    _custom_invalid: set[str] = field(default_factory=set)
    _sorted_values: bool = False  # value counts are in increasing value order
    slices: int = 0
    key_order: bool = False  # text counted in key order (``analyze --exact`` stages it so)

    @property
    def kind(self) -> Kind:
        return kind_of(self.leaf.type)

    def __getstate__(self) -> dict[str, object]:
        """A slice's state as it travels (pickled): the hashes are cheaper made again than
        carried, and merged slices are counted again anyway."""
        state = dict(self.__dict__)
        state["_hashes"] = [None] * len(self._hashes)
        return state

    def observe(self, array: pa.ChunkedArray | pa.Array) -> None:
        """Fold one slice's values of this column into the state."""
        self.slices += 1
        self.row_count += len(array)
        self.null_count += array.null_count
        kind = self.kind
        if kind == Kind.NULL:
            self.null_count += len(array) - array.null_count
            return
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
        coded = (pat.is_dictionary(array.type) and kind in (Kind.STRING, Kind.BINARY)
                 and array.dictionary.null_count == 0)
        if coded:
            self._count_codes(array)
            if not self.statistics:
                return
        if pat.is_dictionary(array.type):
            array = array.dictionary_decode()
        non_null = array.drop_null() if array.null_count else array
        if kind == Kind.NESTED:
            self._lengths.append(_element_counts(non_null))
        elif kind in VALUE_KINDS and not coded:
            self._count_values(non_null, kind)
        for statistic in self.statistics:
            if statistic.kinds is not None and kind.value not in statistic.kinds:
                continue
            value = statistic.compute(non_null)
            if statistic.name in self._custom:
                if statistic.merge is None:
                    self._custom_invalid.add(statistic.name)
                else:
                    value = statistic.merge(self._custom[statistic.name], value)
            self._custom[statistic.name] = value

    def _count_codes(self, array: pa.DictionaryArray) -> None:
        """Append the exact value counts of a dictionary-encoded slice, counted by code
        (``PartitionReader.read_encoded``): the dictionary's values in its order."""
        codes = array.indices.drop_null() if array.null_count else array.indices
        counts = np.bincount(codes.to_numpy(zero_copy_only=False),
                             minlength=len(array.dictionary))
        present = np.flatnonzero(counts)
        values = array.dictionary.take(pa.array(present))
        self._values.append(values.cast(sketches.value_type(values.type)))
        self._hashes.append(None)
        self._counts.append(pa.array(counts[present].astype(np.int64)))
        self._sorted_values = False

    def _count_values(self, non_null: pa.Array, kind: Kind) -> None:
        """Append the exact value counts of one slice (sorted when NumPy can sort it)."""
        dtype = non_null.type
        hashes: np.ndarray | None = None
        if (
            (kind in (Kind.INTEGER, Kind.TEMPORAL)
            and not pat.is_uint64(dtype))
            or (kind == Kind.DECIMAL and dtype.precision <= 18)
        ):
            numbers = (
                keys.unscaled_int64(non_null) if kind == Kind.DECIMAL else keys.integers(non_null)
            )
            unique, counts = unique_counts(numbers)
            if kind == Kind.DECIMAL:
                values = keys.decimals_from_unscaled(pa.array(unique), dtype)
            elif kind == Kind.TEMPORAL:
                storage = keys.physical_int_storage(dtype)
                values = pa.array(unique.astype(storage.to_pandas_dtype())).view(dtype)
            else:
                values = pa.array(unique).cast(dtype)
            self._sorted_values = not self._values
        elif kind == Kind.FLOATING:
            floats = keys.canonical_floats(non_null).to_numpy(zero_copy_only=False)
            unique, counts = np.unique(floats, return_counts=True, equal_nan=True)
            values = pa.array(unique, pa.float64())
            self._sorted_values = not self._values
        else:
            non_null = non_null.cast(sketches.value_type(dtype))  # large types narrowed
            text = kind in (Kind.STRING, Kind.BINARY)
            in_order = sorted_string_counts(non_null) if text and self.key_order else None
            if text:
                values, counts, hashes = in_order or string_value_counts(non_null)
            else:
                counted = pc.value_counts(non_null)
                values, counts = counted.field(0), counted.field(1)
            self._sorted_values = in_order is not None and not self._values
        self._values.append(values)
        self._hashes.append(hashes)
        self._counts.append(
            pa.array(counts, pa.int64()) if isinstance(counts, np.ndarray) else counts
        )

    def merge(self, other: ColumnAccumulator) -> None:
        """Fold another accumulator of the same column (another slice) into this one."""
        self.slices += other.slices
        self.row_count += other.row_count
        self.null_count += other.null_count
        self._values.extend(other._values)
        self._counts.extend(other._counts)
        self._hashes.extend(other._hashes)
        self._sorted_values = False
        self._lengths.extend(other._lengths)
        for statistic in self.statistics:
            if statistic.name not in other._custom:
                continue
            if statistic.name in self._custom:
                if statistic.merge is None:
                    self._custom_invalid.add(statistic.name)
                else:
                    self._custom[statistic.name] = statistic.merge(
                        self._custom[statistic.name], other._custom[statistic.name]
                    )
            else:
                self._custom[statistic.name] = other._custom[statistic.name]
        self._custom_invalid |= other._custom_invalid

    @property
    def values_sorted(self) -> bool:
        """Whether ``value_counts`` gives the values in increasing order (one slice of
        numbers, or text with ``key_order``: counting sorted them), so nothing needs to sort
        them again."""
        return self._sorted_values

    def value_counts(self) -> tuple[pa.Array, np.ndarray]:
        """The exact distinct values and their counts, merged across slices."""
        if not self._values:
            empty = pa.array([], type=sketches.value_type(self.leaf.type))
            return empty, np.zeros(0, dtype=np.int64)
        if len(self._values) > 1:
            table = pa.table(
                {"v": pa.concat_arrays(self._values), "c": pa.concat_arrays(self._counts)}
            )
            grouped = table.group_by("v").aggregate([("c", "sum")])
            self._sorted_values = False
            self._values = [grouped.column("v").combine_chunks()]
            self._counts = [grouped.column("c_sum").combine_chunks()]
            self._hashes = [None]
        return self._values[0], self._counts[0].to_numpy(zero_copy_only=False)

    def finalize(
        self,
        bins: int,
        max_frequencies: int,
        theta_type: str | None = None,
        every_sketch: bool = False,
    ) -> ColumnResult:
        """The partition's statistics of this column. ``theta_type``: the column's Iceberg
        type, to store the theta sketch of its values where the frequencies are not
        complete (``stats/theta.py``). ``every_sketch``: the HLL and KLL sketches even where
        the complete frequencies determine them (files only reduced once, then deleted:
        building them here is cheaper than the reduction rebuilding them from the rows)."""
        kind = self.kind
        row: dict[str, object] = {
            "column": self.leaf.name,
            "column_path": list(self.leaf.path),
            "type": str(self.leaf.type),
            "row_count": self.row_count,
            "null_count": self.null_count,
        }
        for statistic in self.statistics:
            value = self._custom.get(statistic.name)
            row[statistic.name] = None if statistic.name in self._custom_invalid else value
        result = ColumnResult(row)
        if kind == Kind.NESTED:
            lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0)
            if len(lengths):
                row.update(
                    min_length=int(lengths.min()),
                    max_length=int(lengths.max()),
                    avg_length=float(lengths.mean()),
                )
            return result
        if kind not in VALUE_KINDS:
            return result
        values, counts = self.value_counts()
        non_null = self.row_count - self.null_count
        distinct = len(values)
        row["distinct_count"] = distinct
        row["all_distinct"] = distinct == non_null and non_null > 0
        nan_count = 0
        if kind == Kind.FLOATING and distinct:
            nan_mask = pc.is_nan(values).to_numpy(zero_copy_only=False)
            if nan_mask.any():
                nan_count = int(counts[nan_mask].sum())
                values = values.filter(pa.array(~nan_mask))
                counts_ordered = counts[~nan_mask]
            else:
                counts_ordered = counts
        else:
            counts_ordered = counts
        if kind == Kind.FLOATING:
            row["nan_count"] = nan_count
        result.frequency_keys, result.frequency_counts = self._frequencies(
            row, kind, *self.value_counts(), max_frequencies
        )
        if len(values):
            # complete frequencies hold every value: the reduction rebuilds the sketches
            complete = frequencies_complete(distinct, row["frequencies_count"])
            with_sketches = every_sketch or not complete
            self._summaries(row, result, kind, values, counts_ordered, bins, with_sketches)
            if not complete and theta.supported(theta_type):
                row["theta_sketch"] = theta.column_sketch(self.value_counts()[0], theta_type)
        return result

    def _summaries(
        self,
        row: dict,
        result: ColumnResult,
        kind: Kind,
        values: pa.Array,
        counts: np.ndarray,
        bins: int,
        with_sketches: bool = True,
    ) -> None:
        """Min, max, percentiles, moments, lengths, histogram and (unless the frequencies
        make them derivable) sketches (NaN removed)."""
        if kind in ORDERED_NUMERIC:
            numeric = sketches.numeric_values(values, kind)
            if self.values_sorted:
                sorted_values, sorted_counts = values, counts
            else:
                if kind == Kind.DECIMAL and values.type.precision <= 18:
                    order = np.argsort(keys.unscaled_int64(values), kind="stable")
                elif kind == Kind.DECIMAL:
                    order = pc.sort_indices(values).to_numpy(zero_copy_only=False)
                else:
                    order = np.argsort(numeric, kind="stable")
                sorted_values = values.take(pa.array(order))
                sorted_counts = counts[order]
            ends = keys.encode(sorted_values.take(pa.array([0, len(values) - 1])))
            row["min"], row["max"] = ends[0].as_py(), ends[1].as_py()
            picks = nearest_rank_indices(sorted_counts, PERCENTILES)
            picked = keys.encode(sorted_values.take(pa.array(picks, type=pa.int64())))
            for name, key in zip(percentile_names(), picked.to_pylist(), strict=True):
                row[name] = key
            result.histogram = self._histogram(row, kind, values, numeric, counts, bins)
            if with_sketches:
                row["kll_sketch"] = sketches.kll_of(numeric.astype(np.float64), counts)
            if kind in MOMENT_KINDS:
                weights = counts.astype(np.float64)
                x = numeric.astype(np.float64)
                total = float(weights.sum())
                with np.errstate(invalid="ignore", over="ignore"):
                    value_sum = float(np.dot(x, weights))
                    mean = value_sum / total
                    m2 = float(np.dot(weights, (x - mean) ** 2)) if np.isfinite(mean) else np.nan
                variance = m2 / (total - 1) if total > 1 else None
                row.update(
                    sum=value_sum,
                    mean=mean,
                    variance=variance,
                    stddev=float(np.sqrt(variance)) if variance is not None else None,
                )
        else:
            lo, hi = pc.min_max(values).values()
            ends = keys.encode(pa.array([lo.as_py(), hi.as_py()], type=values.type))
            row["min"], row["max"] = ends[0].as_py(), ends[1].as_py()
            if kind == Kind.BOOLEAN:
                truth = values.to_numpy(zero_copy_only=False).astype(bool)
                row["true_count"] = int(counts[truth].sum())
            else:
                lengths = (
                    pc.utf8_length(values) if kind == Kind.STRING else pc.binary_length(values)
                ).to_numpy(zero_copy_only=False)
                row["min_length"] = int(lengths.min())
                row["max_length"] = int(lengths.max())
                row["avg_length"] = float(np.dot(lengths, counts) / counts.sum())
        if with_sketches:
            hashed = self._hashes[0] if len(self._hashes) == 1 else None
            row["hll_sketch"] = sketches.hll_of(
                sketches.hashable_values(values, kind) if hashed is None else hashed.view(np.int64)
            )

    def _histogram(
        self,
        row: dict,
        kind: Kind,
        values: pa.Array,
        numeric: np.ndarray,
        counts: np.ndarray,
        bins: int,
    ) -> np.ndarray | None:
        built = hist.of_values(values, counts, bins, None if kind == Kind.DECIMAL else numeric)
        if built is None:
            return None
        row["histogram_lower"] = hist.lower_key(built.lower, values.type)
        row["histogram_width"] = built.width
        row["histogram_bins"] = len(built.counts)
        return built.counts

    def _frequencies(
        self, row: dict, kind: Kind, values: pa.Array, counts: np.ndarray, max_frequencies: int
    ) -> tuple[pa.Array | None, np.ndarray | None]:
        distinct = len(values)
        row["frequencies_truncated"] = False
        row["frequencies_omitted"] = 0
        if distinct == 0 or row.get("all_distinct"):
            row["frequencies_count"] = 0
            return None, None
        counts = np.asarray(counts, dtype=np.int64)
        if distinct > max_frequencies:
            row["frequencies_truncated"] = True
            row["frequencies_omitted"] = distinct - max_frequencies
        order = pa.array(most_frequent(counts, values, max_frequencies, self.values_sorted))
        table = pa.table({"v": values.take(order), "c": pa.array(counts).take(order)})
        row["frequencies_count"] = table.num_rows
        row["frequencies_min"] = int(table.column("c")[-1].as_py()) if table.num_rows else None
        return keys.encode(table.column("v")), table.column("c").to_numpy()


TALLY_CELLS = 1 << 24
"""The widest value range counted by a tally (128 MiB of counts) instead of a sort."""
TALLY_SLACK = 4096  # a tally's range may exceed the value count by this much (tiny inputs)


def unique_counts(numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(numbers, return_counts=True)`` of int64s. A range not wider than the
    count (dates, small integers, keys) is tallied (l_suppkey, 775,000 rows over 100,000
    values: 1.5 ms against a sort's 5.3 ms); a wider one's counts leave the CPU's caches
    (l_partkey over 2,000,000 values: 13.0 ms against 6.1 ms)."""
    if len(numbers) == 0:
        return np.unique(numbers, return_counts=True)
    low, high = int(numbers.min()), int(numbers.max())
    span = high - low + 1
    if span > min(TALLY_CELLS, len(numbers) + TALLY_SLACK):
        return np.unique(numbers, return_counts=True)
    tally = np.bincount((numbers - low).astype(np.intp, copy=False), minlength=span)
    present = np.flatnonzero(tally)
    return present.astype(np.int64) + low, tally[present].astype(np.int64)


def _element_counts(values: pa.Array) -> np.ndarray:
    """Number of elements of each list or map value (no nulls)."""
    if pat.is_fixed_size_list(values.type):
        return np.full(len(values), values.type.list_size, dtype=np.int64)
    offsets = values.offsets.to_numpy(zero_copy_only=False)
    return np.diff(offsets).astype(np.int64)


