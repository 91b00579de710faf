"""Scenario #1's duplicates from packed fingerprints: ~2 bytes per value cross the shuffle.

A near-unique column's values are almost all unique, so a row per value in the shuffle
(what a ``groupBy(value)`` or a 64-bit fingerprint shuffle costs) is mostly spent on
values that turn out single. Instead each *source* (a partition's contribution rows, or
a previous exact version's rank rows) hashes its keys (``stats/hashing.hash_binary``,
vectorised), puts each 64-bit hash in one of ``BUCKETS`` by its low bits and keeps its
top bits as the fingerprint (``print_bits``: 24-25 for 60M values, so that collisions
add ~0.5 % false candidates); per (column, bucket) the sorted fingerprints are
delta-coded (``encode``: the deltas' low bits packed, their small high parts as bytes,
zstd) into one blob row. Only blobs are shuffled. A (column, bucket) task decodes its
blobs and keeps the fingerprints seen twice or more: a value in two sources, or one a
source counts twice or more (its fingerprint is written twice). The candidates are
broadcast back, each source keeps its rows whose fingerprint is a candidate, and those
few rows are summed by value: a value is a duplicate when its total is above one.

Exact: every real duplicate is a candidate (counted twice in one source or present in
two); fingerprint collisions only add candidates, which the sum discards (their number
is reported). Counts may be negative (an incremental analysis subtracting a removed
partition): a value's total is still summed over every source that has it.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakestats.compute.session import result_schema
from lakestats.stats.hashing import hash_binary

BUCKETS = 256
"""Fingerprint buckets per column (the reduce side's unit of work): the hash's low 8 bits."""

SourceReader = Callable[[int], Iterator[pa.Table]]
"""Source ``i``'s (column_index, value, count) rows of the columns asked for."""

BLOB_SCHEMA = "column_index int, bucket int, blob binary"
CANDIDATE_SCHEMA = "column_index int, print long"
ROW_SCHEMA = "column_index int, value binary, count long"
_HEADER = np.dtype([("n", "<u4"), ("k", "u1"), ("unary_bits", "<u8")])


def print_bits(values: int) -> int:
    """Fingerprint bits for ``values`` values in all: wide enough that colliding pairs,
    ~values^2 / 2^(bits + 9) across the 256 buckets, stay near 0.5 % of the values (a
    false candidate costs one row in the recount), and no wider (each bit is shuffled)."""
    return int(np.clip(np.ceil(np.log2(max(2, 200 * values))) - 9, 8, 32))


def _prints(values: pa.Array, bits: int) -> np.ndarray:
    """Each key's bucket (low 8 bits of its hash) and ``bits``-bit fingerprint (the top
    bits) as one int64: fingerprint << 8 | bucket."""
    hashed = hash_binary(values)
    top = hashed >> np.uint64(64 - bits)
    return (top << np.uint64(8) | (hashed & np.uint64(BUCKETS - 1))).view(np.int64)


def encode(prints: np.ndarray) -> bytes:
    """Sorted fingerprints as a Rice code of their deltas: ``k`` low bits each, packed,
    then the high parts in unary (``high`` zeros and a one), zstd over the whole; ~1.4
    bits above the deltas' entropy."""
    n = len(prints)
    deltas = np.diff(prints.astype(np.uint64), prepend=np.uint64(0))
    k = int(np.log2(max(1.0, float(deltas.mean()) * np.log(2)))) if n else 0
    low = deltas & np.uint64((1 << k) - 1)
    shifts = np.arange(k - 1, -1, -1, dtype=np.uint64)
    packed = np.packbits(((low[:, None] >> shifts) & np.uint64(1)).astype(np.uint8).ravel())
    ends = np.cumsum((deltas >> np.uint64(k)) + np.uint64(1))  # one past each unary code
    unary = np.zeros(int(ends[-1]) if n else 0, dtype=np.uint8)
    unary[(ends - np.uint64(1)).astype(np.int64)] = 1
    header = np.array([(n, k, len(unary))], dtype=_HEADER)
    payload = header.tobytes() + packed.tobytes() + np.packbits(unary).tobytes()
    return struct.pack("<Q", len(payload)) + pa.compress(payload, codec="zstd", asbytes=True)


def decode(blob: bytes) -> np.ndarray:
    """``encode``'s fingerprints back, sorted (in an int64 array)."""
    (size,) = struct.unpack_from("<Q", blob)
    raw = pa.decompress(memoryview(blob)[8:], size, codec="zstd", asbytes=True)
    header = np.frombuffer(raw, dtype=_HEADER, count=1)[0]
    n, k, unary_bits = int(header["n"]), int(header["k"]), int(header["unary_bits"])
    at = _HEADER.itemsize
    low_bytes = (n * k + 7) // 8
    bits = np.unpackbits(np.frombuffer(raw, np.uint8, low_bytes, at), count=n * k)
    weights = np.uint64(1) << np.arange(k - 1, -1, -1, dtype=np.uint64)
    low = bits.reshape(n, k).astype(np.uint64) @ weights if k else np.zeros(n, np.uint64)
    at += low_bytes
    unary = np.unpackbits(np.frombuffer(raw, np.uint8, (unary_bits + 7) // 8, at))
    ends = np.flatnonzero(unary[:unary_bits])
    high = np.diff(ends, prepend=-1).astype(np.uint64) - np.uint64(1)
    return np.cumsum((high << np.uint64(k)) | low).astype(np.int64)


def _column_blobs(
    column: int, values: pa.Array, counts: np.ndarray, bits: int
) -> Iterator[dict]:
    prints = _prints(values, bits)
    prints = np.concatenate([prints, prints[np.abs(counts) >= 2]])  # counted twice: a repeat
    buckets = prints & (BUCKETS - 1)
    order = np.lexsort((prints, buckets))
    prints, buckets = prints[order] >> 8, buckets[order]
    cuts = np.searchsorted(buckets, np.arange(BUCKETS + 1))
    for bucket in range(BUCKETS):
        start, stop = int(cuts[bucket]), int(cuts[bucket + 1])
        if stop > start:
            yield {"column_index": column, "bucket": bucket, "blob": encode(prints[start:stop])}


def _blobs(
    read: SourceReader, bits: dict[int, int], batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Map side: one blob row per (column, bucket) of each source."""
    schema = pa.schema(
        [("column_index", pa.int32()), ("bucket", pa.int32()), ("blob", pa.binary())]
    )
    for batch in batches:
        for source in batch.column(0).to_pylist():
            tables = [t for t in read(source) if t.num_rows]
            if not tables:
                continue
            rows = pa.concat_tables(tables)
            index = rows.column("column_index").to_numpy(zero_copy_only=False)
            for column in np.unique(index).tolist():
                mask = index == column
                picked = rows.filter(pa.array(mask))
                out = list(
                    _column_blobs(
                        column,
                        picked.column("value").combine_chunks(),
                        picked.column("count").to_numpy(zero_copy_only=False),
                        bits[column],
                    )
                )
                if out:
                    yield pa.RecordBatch.from_pylist(out, schema=schema)


def _repeats(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Reduce side: the fingerprints of each (column, bucket) seen twice or more."""
    tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
    if not tables:
        return
    rows = pa.concat_tables(tables)
    columns = rows.column("column_index").to_numpy(zero_copy_only=False).astype(np.int64)
    buckets = rows.column("bucket").to_numpy(zero_copy_only=False).astype(np.int64)
    group = columns * BUCKETS + buckets
    order = np.argsort(group, kind="stable")
    cuts = np.flatnonzero(np.diff(group[order])) + 1
    blobs = rows.column("blob")
    found_columns, found = [], []
    for members in np.split(order, cuts):
        prints = np.sort(np.concatenate([decode(blobs[int(i)].as_py()) for i in members]))
        repeated = np.unique(prints[1:][prints[1:] == prints[:-1]])
        if len(repeated):
            first = int(members[0])
            found.append((repeated << 8) | int(buckets[first]))
            found_columns.append(np.full(len(repeated), columns[first], dtype=np.int32))
    if found:
        yield pa.RecordBatch.from_arrays(
            [pa.array(np.concatenate(found_columns)), pa.array(np.concatenate(found))],
            names=["column_index", "print"],
        )


def _candidate_rows(
    read: SourceReader,
    bits: dict[int, int],
    candidates: dict[int, np.ndarray],
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """Each source's rows whose fingerprint is a candidate."""
    for batch in batches:
        for source in batch.column(0).to_pylist():
            for table in read(source):
                if not table.num_rows:
                    continue
                index = table.column("column_index").to_numpy(zero_copy_only=False)
                keep = np.zeros(len(index), dtype=bool)
                for column, wanted in candidates.items():
                    mask = index == column
                    if mask.any():
                        values = table.column("value").filter(pa.array(mask)).combine_chunks()
                        keep[mask] = np.isin(_prints(values, bits[column]), wanted)
                if keep.any():
                    yield from table.filter(pa.array(keep)).to_batches()


def duplicates(
    sources: DataFrame,
    read: SourceReader,
    values: dict[int, int],
    parallelism: int,
    max_candidates: int,
    report: dict[str, object],
) -> DataFrame | None:
    """(column_index, value, count) of every value whose total over the sources is above
    one; None when more than ``max_candidates`` fingerprints repeat (the caller then
    aggregates every value). ``sources`` has one row per source id (column 0), ``read``
    gives a source's rows of the near-unique columns, ``values`` each column's number of
    values in all the sources (what the fingerprint width is chosen for)."""
    bits = {c: print_bits(n) for c, n in values.items()}
    report["near_unique_print_bits"] = bits
    blobs = sources.mapInArrow(
        functools.partial(_blobs, read, bits), result_schema(BLOB_SCHEMA)
    )
    # toArrow here, not session.collect_small: Spark names the stages after this line, so
    # bench/scale.py can tell the duplicate search's shuffle from the ranks' sort
    found = (
        blobs.repartition(max(1, 2 * parallelism), "column_index", "bucket")
        .mapInArrow(_repeats, result_schema(CANDIDATE_SCHEMA))
        .toArrow()
        .to_pylist()
    )
    report["near_unique_candidates"] = len(found)
    if len(found) > max_candidates:
        return None
    by_column: dict[int, list[int]] = {}
    for row in found:
        by_column.setdefault(row["column_index"], []).append(row["print"])
    candidates = {c: np.unique(np.array(v, dtype=np.int64)) for c, v in by_column.items()}
    rows = sources.mapInArrow(
        functools.partial(_candidate_rows, read, bits, candidates), result_schema(ROW_SCHEMA)
    )
    return (
        rows.groupBy("column_index", "value")
        .agg(F.sum("count").alias("count"))
        .where("count > 1")
    )
