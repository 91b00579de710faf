"""A column group's joint statistics in one partition (``analyze --column-groups``), as
PostgreSQL's ``CREATE STATISTICS`` keeps them: the most common value combinations with
their counts, the number of distinct combinations and the functional-dependency degrees.

The state is the exact joint counts (each distinct combination of the group's values,
as order-preserving keys, ``stats/keys.py``, null where the value is null, and its number of
rows): slices of a partition merge exactly, and ``finalize`` derives everything from it.
Independent columns multiply; correlated ones (``tier`` is always ``gold`` where
``region`` is ``eu``) do not, which is what the joint counts tell the estimator.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pat

from lakestats.stats import hashing, keys, sketches
from lakestats.stats.group_rows import (
    KEY_SEPARATOR,
    GroupRow,
    eight_byte_keys,
    group_row,
    key_names,
    listing,
)
from lakestats.stats.key_ints import keys_as_ints
from lakestats.stats.kinds import Kind, kind_of
from lakestats.stats.leaves import Leaf, leaf_array


def normalized(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pat.is_dictionary(array.type):
        array = array.dictionary_decode()
    array = array.cast(sketches.value_type(array.type))  # large types narrowed, floats widened
    return keys.canonical_floats(array) if pat.is_floating(array.type) else array


def encode_nullable(array: pa.Array) -> pa.Array:
    """``keys.encode`` of every value, null where the value is null."""
    if array.null_count == 0:
        return keys.encode(array).cast(pa.binary())
    valid = array.is_valid()
    encoded = keys.encode(array.filter(valid)).cast(pa.binary())
    return pc.replace_with_mask(pa.nulls(len(array), pa.binary()), valid, encoded)


def coded(array: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """Each row's code (an int array) and each code's key (``encode_nullable``; null: a
    null value): a dictionary-encoded column's own codes (``PartitionReader.read_encoded``),
    else Arrow's dictionary encoding of its values."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if not pat.is_dictionary(array.type) or array.dictionary.null_count:
        array = pc.dictionary_encode(normalized(array), null_encoding="encode")
        return (array.indices.to_numpy(zero_copy_only=False),
                encode_nullable(array.dictionary))
    keys = encode_nullable(normalized(array.dictionary))
    indices = array.indices
    if array.null_count:
        indices = indices.fill_null(len(keys))
        keys = pa.concat_arrays([keys, pa.nulls(1, pa.binary())])
    return indices.to_numpy(zero_copy_only=False), keys


def coded_counts(columns: list[tuple[np.ndarray, pa.Array]]) -> pa.Table:
    """The joint counts (keys ``k0`` …, ``count``) of columns given as codes and their keys
    (``coded``): each row's codes packed into one int and counted."""
    sizes = [len(column_keys) for _, column_keys in columns]
    packed = columns[0][0].astype(np.int64)  # a copy: the rest is added in place
    for (codes, _), size in zip(columns[1:], sizes[1:], strict=True):
        np.multiply(packed, size, out=packed)
        np.add(packed, codes, out=packed)
    possible = int(np.prod(sizes, dtype=object))  # below 2**62: the caller's check
    if _few_possible(possible, len(packed)):
        counts = np.bincount(packed, minlength=possible)
        cells = np.flatnonzero(counts)
        counts = counts[cells]
    else:
        cells, counts = np.unique(packed, return_counts=True)
    out = {}
    for name, (_, column_keys) in reversed(list(zip(key_names(len(columns)), columns,
                                                    strict=True))):
        out[name] = column_keys.take(pa.array(cells % len(column_keys)))
        cells = cells // len(column_keys)
    return pa.table({**{n: out[n] for n in key_names(len(columns))},
                     "count": pa.array(counts.astype(np.int64))})


def supported(leaf: Leaf) -> bool:
    """Whether a column can be in a group: a value column (not nested, not all null)."""
    return kind_of(leaf.type) not in (Kind.NESTED, Kind.NULL)


def dependency_pairs(width: int) -> list[tuple[tuple[int, ...], int]]:
    """The dependencies kept: each column on each other one and, in groups of three or
    more, each column on all the others (PostgreSQL keeps every subset; these answer
    the questions asked of pairs and of the whole group)."""
    pairs: list[tuple[tuple[int, ...], int]] = [
        ((a,), b) for a, b in itertools.permutations(range(width), 2)
    ]
    if width >= 3:
        pairs += [(tuple(i for i in range(width) if i != c), c) for c in range(width)]
    return pairs


def supporting_rows(joint: pa.Table, determinant: tuple[int, ...], dependent: int) -> int:
    """Rows whose determinant values always come with one dependent value: PostgreSQL's
    functional-dependency degree is this over the rows."""
    names = key_names(joint.num_columns - 1)
    det = [names[i] for i in determinant]
    if len(det) + 1 == len(names):  # the whole group: its rows are the combinations already
        marginal = joint.select([*det, names[dependent], "count"]).rename_columns(
            [*det, names[dependent], "count_sum"]
        )
    else:
        marginal = joint.group_by([*det, names[dependent]], use_threads=False).aggregate(
            [("count", "sum")]
        )
    by_det = marginal.group_by(det, use_threads=False).aggregate(
        [("count_sum", "sum"), ("count_sum", "count")]
    )
    single = pc.equal(by_det.column("count_sum_count"), 1)
    return int(pc.sum(pc.filter(by_det.column("count_sum_sum"), single)).as_py() or 0)


@dataclass
class GroupAccumulator:
    """The exact joint counts of one group's columns over the slices seen."""

    columns: tuple[str, ...]
    leaves: tuple[Leaf, ...]
    row_count: int = 0
    _parts: list[pa.Table] = field(default_factory=list)
    # beside each part: a pair's keys as ints in increasing key order, when counted from ints
    _part_ints: list[PairInts | None] = field(default_factory=list)

    def observe(self, table: pa.Table) -> None:
        """Fold one slice's rows into the joint counts."""
        self.row_count += table.num_rows
        if table.num_rows == 0:
            return
        names = key_names(len(self.leaves))
        arrays = [leaf_array(table, leaf) for leaf in self.leaves]
        if all(pat.is_dictionary(a.type) for a in arrays):  # read encoded: count the codes
            columns = [coded(a) for a in arrays]
            if np.prod([float(len(column_keys)) for _, column_keys in columns]) < 2.0**62:
                self.add_joint(coded_counts(columns))
                return
        raw = pa.table({n: normalized(a) for n, a in zip(names, arrays, strict=True)})
        counted = _pair_counts(raw)
        if counted is not None:
            self._parts.append(counted[0])
            self._part_ints.append(counted[1])
            return
        grouped = raw.group_by(names, use_threads=False).aggregate([([], "count_all")])
        self.add_joint(
            pa.table(
                {
                    **{n: encode_nullable(grouped.column(n).combine_chunks()) for n in names},
                    "count": grouped.column("count_all").cast(pa.int64()),
                }
            )
        )

    def add_joint(self, joint: pa.Table) -> None:
        """Fold joint counts already made (``k0`` …, ``count``) of rows already counted."""
        self._parts.append(joint)
        self._part_ints.append(None)

    def finalize_rows(self, max_frequencies: int) -> list[GroupRow]:
        return [self.finalize(max_frequencies)]

    def merge(self, other: GroupAccumulator) -> None:
        self.row_count += other.row_count
        self._parts.extend(other._parts)
        self._part_ints.extend(other._part_ints)

    def joint(self) -> pa.Table:
        """Every distinct combination (``k0`` … as keys) and its rows, merged."""
        names = key_names(len(self.leaves))
        if not self._parts:
            return pa.table(
                {**{n: pa.array([], pa.binary()) for n in names}, "count": pa.array([], pa.int64())}
            )
        if len(self._parts) > 1:
            counted: tuple[pa.Table, PairInts | None] | None = _merged_pair_counts(
                self._parts, self._part_ints
            )
            if counted is None:
                merged = pa.concat_tables(self._parts).group_by(
                    names, use_threads=False
                ).aggregate([("count", "sum")])
                merged = merged.rename_columns([*names, "count"]).select([*names, "count"])
                counted = (merged, None)
            self._parts, self._part_ints = [counted[0]], [counted[1]]
        return self._parts[0]

    def finalize(self, max_frequencies: int) -> GroupRow:
        """The partition's row of ``groups.parquet`` (``store/schemas.GROUPS_SCHEMA``)."""
        joint = self.joint()
        sorted_ints = self._part_ints[0] if self._part_ints else None
        pair = sorted_ints or _pair_ints(joint)
        carried: tuple[int, bool, bytes | None] = (0, False, None)
        if pair is None:
            dependencies = [
                (det, dep, supporting_rows(joint, det, dep))
                for det, dep in dependency_pairs(len(self.columns))
            ]
        else:  # the same figures and sketch from the keys' ints, without grouping by bytes
            counts = joint.column("count").to_numpy()
            dependencies = [((0,), 1, _pair_support(pair[0], counts)),
                            ((1,), 0, _pair_support(pair[1], counts))]
            if joint.num_rows > max_frequencies:
                carried = (0, False, sketches.hll_of(_pair_hashes(*pair)))
        return group_row(
            self.columns,
            [str(leaf.type) for leaf in self.leaves],
            self.row_count,
            joint,
            listing(joint, max_frequencies, key_sorted=sorted_ints is not None),
            distinct=(joint.num_rows, joint.num_rows, joint.num_rows, True),
            dependencies=dependencies,
            carried=carried,
        )


PairInts = tuple[np.ndarray, np.ndarray]


def _pair_counts(raw: pa.Table) -> tuple[pa.Table, PairInts] | None:
    """The joint counts (keys ``k0``, ``k1``, ``count``) of two integer or temporal columns
    without nulls, counted from their ints (``_counted_pairs``). None for any other group."""
    if raw.num_columns != 2:
        return None
    ints = []
    for column in raw.columns:
        array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        if (array.null_count or len(array) == 0 or pat.is_uint64(array.type)
                or kind_of(array.type) not in (Kind.INTEGER, Kind.TEMPORAL)):
            return None
        ints.append(keys.integers(array))
    return _counted_pairs(ints[0], ints[1], None)


def _merged_pair_counts(
    parts: list[pa.Table], part_ints: list[PairInts | None]
) -> tuple[pa.Table, PairInts] | None:
    """Slices' joint counts of a pair of 8-byte keys without nulls summed from the keys'
    ints (``_counted_pairs``): Arrow's grouping by two binary columns took 0.1 s per
    slice-merge of a pair of id columns. None when a part's keys are not such keys."""
    pairs = [ints or _pair_ints(part) for part, ints in zip(parts, part_ints, strict=True)]
    if any(pair is None for pair in pairs):
        return None
    return _counted_pairs(
        np.concatenate([pair[0] for pair in pairs]),  # type: ignore[index]
        np.concatenate([pair[1] for pair in pairs]),  # type: ignore[index]
        np.concatenate([part.column("count").to_numpy() for part in parts]),
    )


def _counted_pairs(
    first: np.ndarray, second: np.ndarray, weights: np.ndarray | None
) -> tuple[pa.Table, PairInts] | None:
    """The distinct (``first``, ``second``) int64 pairs as keys ``k0``, ``k1`` and their rows
    (each pair's ``weights`` summed, or its occurrences) in increasing key order, and the
    pairs' ints; by one sort of the pairs packed
    into one 64-bit int: Arrow's hash grouping by two columns takes five times as long on a
    pair of id columns (few possible pairs are counted in an array as long as their
    number). None when the two ranges do not pack into 63 bits."""
    offsets, lows, spans = [], [], []
    for ints in (first, second):
        low, high = int(ints.min()), int(ints.max())
        lows.append(np.uint64(low % 2**64))
        spans.append(high - low + 1)
        with np.errstate(over="ignore"):
            offsets.append(ints.view(np.uint64) - lows[-1])
    if spans[0] * spans[1] >= 2**63:
        return None
    width = np.uint64(spans[1])
    packed = offsets[0]  # in place: the offsets are this function's own arrays
    np.multiply(packed, width, out=packed)
    np.add(packed, offsets[1], out=packed)
    if _few_possible(spans[0] * spans[1], len(packed)):  # counted in an array
        all_counts = np.bincount(packed.view(np.int64), weights=weights,
                                 minlength=spans[0] * spans[1])
        packed = np.flatnonzero(all_counts).astype(np.uint64)
        counts = all_counts[packed.view(np.int64)]
    elif weights is None:  # sorted in place: ``packed`` is this function's own
        packed.sort()
        starts = np.flatnonzero(np.r_[True, packed[1:] != packed[:-1]])
        counts = np.diff(np.append(starts, len(packed)))
        packed = packed[starts]
    else:
        order = np.argsort(packed)
        packed = packed[order]
        starts = np.flatnonzero(np.r_[True, packed[1:] != packed[:-1]])
        packed, counts = packed[starts], np.add.reduceat(weights[order], starts)
    high, low = np.divmod(packed, width)
    with np.errstate(over="ignore"):
        np.add(high, lows[0], out=high)
        np.add(low, lows[1], out=low)
    first, second = high.view(np.int64), low.view(np.int64)
    table = pa.table({"k0": keys.int64_keys(first), "k1": keys.int64_keys(second),
                      "count": pa.array(np.asarray(counts).astype(np.int64))})
    return table, (first, second)


def _few_possible(possible: int, rows: int) -> bool:
    """Whether ``possible`` values are few enough to count ``rows`` in an array of them
    (``np.bincount``) rather than sort them."""
    return possible <= max(4 * rows, 1 << 16)


def _pair_ints(joint: pa.Table) -> PairInts | None:
    """A two-column group's keys as ints (``keys_as_ints``) when both are 8-byte keys
    without nulls (numbers and temporals), else None."""
    names = [n for n in joint.column_names if n.startswith("k")]
    if len(names) != 2 or joint.num_rows == 0:
        return None
    out = []
    for name in names:
        column = joint.column(name).combine_chunks()
        if column.null_count or not eight_byte_keys(column):
            return None
        out.append(keys_as_ints(column))
    return out[0], out[1]


def _pair_support(determinant: np.ndarray, counts: np.ndarray) -> int:
    """``supporting_rows`` of one column of a pair on the other: the rows of the pairs whose
    ``determinant`` value is in no other pair (the pairs are distinct)."""
    low = int(determinant.min())
    span = int(determinant.max()) - low + 1
    if _few_possible(span, len(determinant)):  # counted in an array
        offsets = determinant - low
        return int(counts[np.bincount(offsets, minlength=span)[offsets] == 1].sum())
    _, inverse, pairs = np.unique(determinant, return_inverse=True, return_counts=True)
    return int(counts[pairs[inverse] == 1].sum())


_SEPARATOR_WORD = np.uint64(int.from_bytes(KEY_SEPARATOR, "little"))
_SEPARATOR_BITS = np.uint64(8 * len(KEY_SEPARATOR))


def _pair_hashes(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """``combination_hashes`` of two 8-byte keys from their ints: the 19 bytes (key,
    separator, key) as little-endian words, hashed as ``hash_binary`` hashes those bytes."""
    sign = np.uint64(1 << 63)
    head = (first.view(np.uint64) ^ sign).byteswap()  # the key's bytes as a little-endian word
    tail = (second.view(np.uint64) ^ sign).byteswap()
    with np.errstate(over="ignore"):
        words = [head, _SEPARATOR_WORD | (tail << _SEPARATOR_BITS),
                 tail >> (np.uint64(64) - _SEPARATOR_BITS)]
    length = 16 + len(KEY_SEPARATOR)
    return hashing.hash_fixed_words(words, length).view(np.int64)
