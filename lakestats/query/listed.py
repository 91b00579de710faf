"""One column's listed (frequent) values over many partitions, laid out flat so that the
count of listed rows in a key range is two ``searchsorted`` per range for every partition
at once (``survivors.leaf``), with each partition's histogram bins less its listed values;
and the method codes of the survivors' estimates.

Where every listed key of a column has one width and the partition histograms hold them
(``IndexPartition.frequency_arrays``), ``Listed`` lays them out in NumPy (``Fixed``: no
Python object per value, so a first visit of a high-cardinality column is vectorised too).

Over 400 lines because the two layouts (Python keys and fixed-width NumPy keys) answer the
same range counts and are kept side by side so that they stay equal.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np

from lakestats.query.source import PartitionSource
from lakestats.stats import key_ranges as kr
from lakestats.stats import selectivity as sel
from lakestats.stats import selectivity_vector as sv
from lakestats.stats.column_summary import NAN_KEY
from lakestats.stats.kinds import Kind

MIN_MAX, FREQUENCIES, EMPTY, NULLS, HISTOGRAM, APPROX = 1, 2, 4, 8, 16, 32
_NAMES = ((MIN_MAX, "min/max"), (FREQUENCIES, "frequencies"), (EMPTY, "empty"),
          (HISTOGRAM, "histogram"), (APPROX, "histogram (approx.)"))
_METHODS: dict[int, str] = {}


def method_name(code: int) -> str:
    """The method text of a code (its names sorted and joined as ``selectivity._sum``
    does, then `` + null count`` as ``partition_estimate.leaf_estimate`` adds it)."""
    found = _METHODS.get(code)
    if found is None:
        names = sorted(name for bit, name in _NAMES if code & bit)
        found = " + ".join(names) + (" + null count" if code & NULLS else "")
        _METHODS[code] = found
    return found


_at = sel.key_position
MAX_ENTRIES = 1_000_000
"""Listed values (over the partitions of one column) beyond which a column's conditions
are estimated one by one (complete frequencies of a high-cardinality column: their
per-partition lookup is a bisection, the flat layout a sort of all of them)."""


class Listed:
    """One column's listed (frequent) values over the partitions it was built for
    (``known``), flat: entry ``e`` is partition ``part[e]``'s value at ``position[e]`` of
    the sorted union ``ordered`` with count ``counts[e]``, ordered by partition then
    value; ``cumulative`` sums them. Per partition: ``complete`` frequencies, ``total``
    listed count, and where its [min, max] falls in the union (``span_start``,
    ``span_end``)."""

    def __init__(self, partitions: Sequence, column: str, positions_: np.ndarray) -> None:
        count = len(partitions)
        self.known = np.zeros(count, dtype=bool)
        self.complete = np.zeros(count, dtype=bool)
        self.total = np.zeros(count, dtype=np.int64)
        self.too_big = False
        self.fixed: Fixed | None = None
        arrays = _arrays_of(partitions, column, positions_)
        if arrays is not None:  # fixed-width keys: laid out in NumPy (``Fixed``)
            self.fixed = Fixed(self, arrays, count)
            self._histograms(partitions, column, [x[0] for x in arrays])
            return
        per_part = []
        union: set[bytes] = set()
        entries = 0
        for p in positions_.tolist():
            s = partitions[p].summary(column)
            listed, counts = sel._listed(s)
            entries += len(listed)
            if entries > MAX_ENTRIES:  # laying them out would cost more than it saves
                self.too_big = True
                return
            if not sel.strictly_increasing(listed):
                continue  # unsorted (never written so): estimated one by one
            freq = s.frequencies
            self.known[p] = True
            self.complete[p] = freq is not None and freq.complete
            self.total[p] = int(counts.sum())
            per_part.append((p, listed, counts, s.min_key, s.max_key))
            union.update(listed)
        self._histograms(partitions, column, [x[0] for x in per_part])
        ordered = self.ordered = sorted(union)
        where = {k: i for i, k in enumerate(ordered)}
        self.stride = len(ordered) + 1
        self.span_start = np.zeros(count, dtype=np.int64)
        self.span_end = np.zeros(count, dtype=np.int64)
        flat: list[int] = []
        flat_counts: list[np.ndarray] = []
        for p, listed, counts, low, high in per_part:
            base = p * self.stride
            flat.extend(base + where[k] for k in listed)
            flat_counts.append(counts)
            if low is not None and high is not None:
                self.span_start[p] = bisect.bisect_left(ordered, (1, low, 1), key=_at)
                self.span_end[p] = bisect.bisect_left(ordered, (1, high, 2), key=_at)
        self.keys = np.asarray(flat, dtype=np.int64)
        counts_all = (np.concatenate(flat_counts) if flat_counts
                      else np.zeros(0, dtype=np.int64)).astype(np.int64)
        self.cumulative = np.concatenate([[0], np.cumsum(counts_all)]).astype(np.int64)

    def _histograms(self, partitions: Sequence, column: str, parts: list[int]) -> None:
        """Per partition: its histogram's bins with the listed values taken out
        (``selectivity._remainders``), flat with cumulative sums, and the bin arithmetic's
        inputs (``lower``, ``width``, bins, min and max in storage units). ``usable``
        where the histogram range case can be vectorised (an ordered column, a histogram
        with bins and a width, integers far from the int64 ends)."""
        count = len(partitions)
        self.usable = np.zeros(count, dtype=bool)
        self.exact = np.zeros(count, dtype=bool)
        self.nbins = np.ones(count, dtype=np.int64)
        self.offset = np.zeros(count, dtype=np.int64)
        self.h_lower = np.zeros(count, dtype=object)
        self.h_width = np.zeros(count, dtype=object)
        self.min_num = np.zeros(count, dtype=object)
        self.max_num = np.zeros(count, dtype=object)
        self.has_listed = np.zeros(count, dtype=bool)
        flat: list[np.ndarray] = []
        at = 0
        self.integral = False
        for p in parts:
            s = partitions[p].summary(column)
            if s.kind not in sel._HISTOGRAM_KINDS or s.min_key is None or s.max_key is None:
                continue
            self.integral = sel._integral(s)
            if self.complete[p] or s.ordered_values - self.total[p] <= 0:
                continue  # answered from the frequencies: the bins are never asked
            hist = s.histogram
            if hist is None or not len(hist.counts) or hist.width == 0:
                continue
            listed_, counts = sel._listed(s)
            numbers = (hist.lower, hist.width, sel._number(s, s.min_key),
                       sel._number(s, s.max_key))
            if self.integral and any(abs(int(x)) >= 1 << 52 for x in numbers):
                continue  # far from the int64 ends, and exact as doubles
            remainder = sel._remainders(s, hist, listed_, counts)
            self.usable[p] = True
            self.exact[p] = hist.exact
            self.nbins[p] = len(remainder)
            self.offset[p] = at
            self.h_lower[p], self.h_width[p], self.min_num[p], self.max_num[p] = numbers
            self.has_listed[p] = bool(len(listed_))
            flat.append(np.asarray(remainder, dtype=np.int64))
            at += len(remainder)
        self.remainder = np.concatenate(flat) if flat else np.zeros(0, dtype=np.int64)
        self.rem_cumulative = np.concatenate([[0], np.cumsum(self.remainder)]).astype(np.int64)
        kind = np.int64 if self.integral else np.float64
        for name in ("h_lower", "h_width", "min_num", "max_num"):
            values = getattr(self, name)
            setattr(self, name, np.asarray(
                [int(v) if self.integral else float(v) for v in values.tolist()], dtype=kind
            ))

    def histogram_range(
        self,
        parts: np.ndarray,
        c: sv.Clip,
        r: kr.KeyRange,
        number,  # noqa: ANN001 - a key to its storage number
        listed_in: np.ndarray,
        rest: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``selectivity._histogram_range`` of ``r`` clipped to each partition's [min, max]
        for the partitions ``parts`` (all ``usable``): rows, lower, upper and method code."""
        lo_key, lo_inclusive = r.lower
        hi_key, hi_inclusive = r.upper
        at_min, at_max = c.start_is_min[parts], c.end_is_max[parts]
        dtype = np.int64 if self.integral else np.float64
        lo = self.min_num[parts] if lo_key is None else np.where(
            at_min, self.min_num[parts], np.asarray(number(lo_key), dtype=dtype))
        hi = self.max_num[parts] if hi_key is None else np.where(
            at_max, self.max_num[parts], np.asarray(number(hi_key), dtype=dtype))
        lo_inc = at_min | lo_inclusive
        hi_inc = at_max | hi_inclusive
        return self.histogram_pairs(parts, lo, lo_inc, hi, hi_inc, listed_in, rest)

    def histogram_pairs(
        self,
        parts: np.ndarray,
        lo: np.ndarray,
        lo_inc: np.ndarray,
        hi: np.ndarray,
        hi_inc: np.ndarray,
        listed_in: np.ndarray,
        rest: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``histogram_range``'s arithmetic, per element: partition ``parts[e]`` and the
        range's clipped ends (storage numbers ``lo``/``hi``, inclusive or not)."""
        lower, width, nbins = self.h_lower[parts], self.h_width[parts], self.nbins[parts]
        first, last = self._bin_of(lo, lower, width, nbins), self._bin_of(hi, lower, width, nbins)
        base = self.offset[parts]
        cum = self.rem_cumulative
        inner = last > first + 1
        full = np.where(inner, cum[base + np.maximum(last, first + 1)] - cum[base + first + 1], 0)
        point = full.astype(np.float64)
        edge = np.zeros(len(parts), dtype=np.int64)
        for b, take in ((first, np.ones(len(parts), dtype=bool)), (last, last != first)):
            share = self._share(b, lo, lo_inc, hi, hi_inc, lower, width, nbins, parts)
            rem = self.remainder[base + b]
            whole = take & (share >= 1.0) if self.integral else np.zeros(len(parts), bool)
            part_ = take & ~whole
            full = np.where(whole, full + rem, full)
            edge = np.where(part_, edge + rem, edge)
            point = np.where(whole, point + rem.astype(np.float64),
                             np.where(part_, point + rem * share, point))
        exact = self.exact[parts]
        rows = listed_in + point
        low = np.where(exact, listed_in + full, listed_in)
        high = np.where(exact, listed_in + full + edge, listed_in + rest)
        rows, low, high = sv._of(rows, low, high)
        code = np.where(exact, np.where(self.has_listed[parts], FREQUENCIES | HISTOGRAM,
                                        HISTOGRAM), APPROX)
        return rows, low, high, code

    def _bin_of(self, value, lower, width, nbins):  # noqa: ANN001, ANN202
        """``selectivity._bin_of`` elementwise."""
        if self.integral:
            return np.minimum(np.maximum((value - lower) // width, 0), nbins - 1)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            raw = (value - lower) / width
            b = np.minimum(np.maximum(np.floor(np.where(np.isfinite(raw), raw, 0.0)), 0),
                           nbins - 1).astype(np.int64)
        b = np.where(np.isnan(raw), 0, b)
        b = np.where(np.isinf(raw), np.where(raw > 0, nbins - 1, 0), b)
        # the guess checked against the reported edges, as ``selectivity._bin_of`` does
        value = np.broadcast_to(np.asarray(value, dtype=np.float64), b.shape)
        with np.errstate(invalid="ignore", over="ignore"):
            for _ in range(int(np.max(nbins, initial=1))):  # one step a pass; mostly none
                below = (b > 0) & (value < lower + b * width)
                above = ~below & (b < nbins - 1) & (value >= lower + (b + 1) * width)
                if not (below.any() or above.any()):
                    break
                b = np.where(below, b - 1, np.where(above, b + 1, b))
        return b

    def _share(self, b, lo, lo_inc, hi, hi_inc, lower, width, nbins, parts):  # noqa: ANN001, ANN202, PLR0913
        """``selectivity._bin_share`` elementwise."""
        if self.integral:
            start = lower + b * width
            top = start + width - 1
            top = np.where((b == nbins - 1) | (self.max_num[parts] < top),
                           np.minimum(top, self.max_num[parts]), top)
            q_lo = np.where(lo_inc, lo, lo + 1)
            q_hi = np.where(hi_inc, hi, hi - 1)
            covered = np.minimum(top, q_hi) - np.maximum(start, q_lo) + 1
            span = top - start + 1
            short = np.minimum(covered / span, np.nextafter(1.0, 0.0))
            return np.where(covered >= span, 1.0, np.maximum(0.0, short))
        with np.errstate(over="ignore", invalid="ignore"):  # edges past 1.8e308 are inf
            start = lower + b * width
            end = lower + (b + 1) * width
        end = np.where((b == nbins - 1), np.maximum(end, self.max_num[parts]), end)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            covered = np.minimum(end, hi) - np.maximum(start, lo)
            share = np.where(end > start, covered / (end - start), 0.5)
        return np.where(np.isfinite(share), np.minimum(1.0, np.maximum(0.0, share)), 0.5)

    def listed_in(self, parts: np.ndarray, r: kr.KeyRange) -> np.ndarray:
        """Per partition of ``parts``: the listed count inside ``r`` clipped to the
        partition's [min, max] (``selectivity._listed_in`` of the clipped range)."""
        if self.fixed is not None:
            return self.fixed.listed_in(parts, r)
        start = max(0, bisect.bisect_left(self.ordered, r.start, key=_at))
        end = bisect.bisect_left(self.ordered, r.end, key=_at)
        lo = np.maximum(start, self.span_start[parts])
        hi = np.maximum(lo, np.minimum(end, self.span_end[parts]))
        base = parts * self.stride
        a = np.searchsorted(self.keys, base + lo, side="left")
        b = np.searchsorted(self.keys, base + hi, side="left")
        return self.cumulative[b] - self.cumulative[a]


def _arrays_of(
    partitions: Sequence, column: str, positions_: np.ndarray
) -> list[tuple] | None:
    """Per partition at ``positions_`` (those with sorted listed values): (position, keys
    as ``S{width}``, counts, complete, min key, max key), when every partition's listed
    values come as one-width NumPy keys (``IndexPartition.frequency_arrays``: the
    partition histograms hold them) or are none; else None (the bytes layout)."""
    out = []
    width = None
    for p in positions_.tolist():
        part = partitions[p]
        s = part.summary(column)
        get = getattr(part, "frequency_arrays", None)
        memo = sel._memo(s)  # a rebuild (more partitions) does not redo the others
        if "fixed" not in memo:
            memo["fixed"] = get(column) if callable(get) else None
        freq = memo["fixed"]
        if freq is None:
            if not callable(get) or (s.frequencies is not None and len(s.frequencies.keys)):
                return None
            keys_ = np.zeros(0, dtype="S1")
            counts = np.zeros(0, dtype=np.int64)
            complete = s.frequencies is not None and s.frequencies.complete
        else:
            keys_, counts, complete = freq.keys, freq.counts, freq.complete
            if not isinstance(keys_, np.ndarray):  # nothing listed
                keys_ = np.zeros(0, dtype="S1")
            if len(keys_):
                if width is None:
                    width = keys_.dtype.itemsize
                elif keys_.dtype.itemsize != width:
                    return None
        if (s.kind == Kind.FLOATING and len(keys_)
                and keys_[-1:].tobytes() == NAN_KEY):  # as selectivity._listed_values
            keys_, counts = keys_[:-1], counts[:-1]
        if len(keys_) > 1 and not _increasing(keys_):
            continue  # unsorted (never written so): estimated one by one
        out.append((p, keys_, np.asarray(counts, dtype=np.int64), bool(complete),
                    s.min_key, s.max_key))
    if width is None:
        width = 8
    return [(p, k if len(k) else np.zeros(0, dtype=f"S{width}"), *rest)
            for p, k, *rest in out]


def _increasing(keys_: np.ndarray) -> bool:
    """Whether each ``S{width}`` key is less than the next (``memcmp``): on big-endian
    8-byte words where the width allows (NumPy's bytes comparisons are slower)."""
    width = keys_.dtype.itemsize
    if width not in (8, 16):
        return bool(np.all(keys_[1:] > keys_[:-1]))
    words = keys_.view(">u8").reshape(len(keys_), width // 8)
    high = words[:, 0]
    if width == 8:
        return bool(np.all(high[1:] > high[:-1]))
    low = words[:, 1]
    return bool(np.all((high[1:] > high[:-1])
                       | ((high[1:] == high[:-1]) & (low[1:] > low[:-1]))))


class Fixed:
    """``Listed``'s layout when every key has one width: the partitions' keys flat in
    NumPy (``S{width}``, ordered by partition then key; ``start``/``end`` per
    partition), searched per partition at first; from the second range on, with the
    union of the keys ranked (one stable sort) as the bytes layout does, two
    ``searchsorted`` per range."""

    def __init__(self, table: Listed, arrays: list[tuple], count: int) -> None:
        self.width = arrays[0][1].dtype.itemsize if arrays else 8
        self.start = np.zeros(count, dtype=np.int64)
        self.end = np.zeros(count, dtype=np.int64)
        self.low = [None] * count
        self.high = [None] * count
        at = 0
        for p, keys_, counts, complete, low, high in arrays:
            table.known[p] = True
            table.complete[p] = complete
            table.total[p] = int(counts.sum())
            self.start[p], self.end[p] = at, at + len(keys_)
            self.low[p], self.high[p] = low, high
            at += len(keys_)
        self.parts = [x[0] for x in arrays]
        dtype = f"S{self.width}"
        self.flat = (np.concatenate([x[1] for x in arrays]).astype(dtype, copy=False)
                     if arrays else np.zeros(0, dtype=dtype))
        counts_all = (np.concatenate([x[2] for x in arrays]) if arrays
                      else np.zeros(0, dtype=np.int64))
        self.cumulative = np.concatenate([[0], np.cumsum(counts_all)]).astype(np.int64)
        self.asked = 0
        self.ranked: tuple | None = None

    def _position(self, keys_: np.ndarray, position: tuple) -> int:
        """How many of the sorted ``keys_`` lie before ``position`` (``bisect_left`` of
        it with ``key_position``)."""
        if len(position) < 3:
            return 0 if position[0] == 0 else len(keys_)
        _, key, tag = position
        if len(key) == self.width:
            probe = np.frombuffer(key, dtype=keys_.dtype)
            return int(np.searchsorted(keys_, probe, "left" if tag == 1 else "right")[0])
        blob, w = keys_.tobytes(), self.width  # another width: compared as bytes
        listed_ = [blob[i : i + w] for i in range(0, len(blob), w)]
        return bisect.bisect_left(listed_, position, key=_at)

    def _span(self, p: int, keys_: np.ndarray) -> tuple[int, int]:
        low, high = self.low[p], self.high[p]
        if low is None or high is None:
            return 0, 0
        return self._position(keys_, (1, low, 1)), self._position(keys_, (1, high, 2))

    def listed_in(self, parts: np.ndarray, r: kr.KeyRange) -> np.ndarray:
        """``Listed.listed_in`` (see there)."""
        self.asked += 1
        if self.asked > 1:
            ordered, keys_, stride, span_start, span_end = self._ranked()
            start = self._position(ordered, r.start)
            end = self._position(ordered, r.end)
            lo = np.maximum(start, span_start[parts])
            hi = np.maximum(lo, np.minimum(end, span_end[parts]))
            base = parts * stride
            a = np.searchsorted(keys_, base + lo, side="left")
            b = np.searchsorted(keys_, base + hi, side="left")
            return self.cumulative[b] - self.cumulative[a]
        out = np.zeros(len(parts), dtype=np.int64)
        for x, p in enumerate(parts.tolist()):
            first = int(self.start[p])
            keys_ = self.flat[first : self.end[p]]
            span_lo, span_hi = self._span(p, keys_)
            lo = max(self._position(keys_, r.start), span_lo)
            hi = max(lo, min(self._position(keys_, r.end), span_hi))
            out[x] = self.cumulative[first + hi] - self.cumulative[first + lo]
        return out

    def _ranked(self) -> tuple:
        """The union of the keys (sorted) and each key's partition x rank, as the bytes
        layout has them; made once."""
        if self.ranked is None:
            flat = self.flat
            order = np.argsort(_sort_key(flat, self.width), kind="stable")
            ordered_all = flat[order]
            new = np.ones(len(flat), dtype=bool)
            new[1:] = ordered_all[1:] != ordered_all[:-1]
            rank = np.empty(len(flat), dtype=np.int64)
            rank[order] = np.cumsum(new) - 1
            ordered = ordered_all[new]
            stride = len(ordered) + 1
            lengths = (self.end - self.start)[self.parts]
            part_of = np.repeat(np.asarray(self.parts, dtype=np.int64), lengths)
            count = len(self.start)
            span_start = np.zeros(count, dtype=np.int64)
            span_end = np.zeros(count, dtype=np.int64)
            for p in self.parts:
                span_start[p], span_end[p] = self._span(p, ordered)
            self.ranked = (ordered, part_of * stride + rank, stride, span_start, span_end)
        return self.ranked


def _sort_key(flat: np.ndarray, width: int) -> np.ndarray:
    """An array that sorts as the ``S{width}`` keys do (``memcmp``): the keys' one
    varying big-endian 8-byte word when the others are the same in every key, else the
    keys themselves."""
    if not len(flat):
        return flat
    words = -(-width // 8)
    matrix = np.zeros((len(flat), words * 8), dtype=np.uint8)
    matrix[:, :width] = flat.view(np.uint8).reshape(len(flat), width)
    columns = matrix.view(">u8").astype(np.uint64)
    varying = [i for i in range(words) if bool(np.any(columns[:, i] != columns[0, i]))]
    if len(varying) > 1:
        return flat
    return columns[:, varying[0] if varying else 0]


def listed(partitions: PartitionSource, column: str, survivors: np.ndarray) -> Listed:
    """The column's ``Listed`` covering ``survivors``, kept on ``partitions`` (a resident
    estimator's) and rebuilt with the partitions it did not cover yet."""
    cache = partitions.cache.setdefault("listed", {})
    found = cache.get(column)
    if found is not None and (found[1].too_big or found[0][survivors].all()):
        return found[1]
    wanted = np.zeros(len(partitions), dtype=bool)
    if found is not None:
        wanted |= found[0]
    # those read before too: fewer rebuilds as the set grows
    wanted |= partitions.visited_mask([column], np.arange(len(partitions)))
    wanted[survivors] = True
    built = Listed(partitions, column, np.flatnonzero(wanted))
    cache[column] = (wanted, built)
    return built


__all__ = ["FREQUENCIES", "MAX_ENTRIES", "Fixed", "Listed", "listed", "method_name"]
