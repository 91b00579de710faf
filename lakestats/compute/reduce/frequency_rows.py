"""What one group of partitions contributes to the table-level frequencies.

Contract: ``fold_frequency_rows`` reads the frequency files of a group (``members``:
positions in ``job.partitions``) and returns its rows combined per (column, value) and
pruned with sound bounds (``prune.py``), with holders packed with positions inside the
group. It is two steps: ``combine_frequency_rows`` (what does not depend on which columns
are incomplete table-wide: a staged reduction's first pass makes it from the files it
holds already, ``cache.GroupCache.ensure_combined_rows``) and ``finish_frequency_rows``
(pruning and holders, once the scalar states say which columns are incomplete). Either
way the same rows.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lakestats.compute.reduce.combine import EMPTY_COMBINED, combine
from lakestats.compute.reduce.fold import CATEGORICAL, COMBINE_ROWS, ReadAhead
from lakestats.compute.reduce.job import ReduceJob
from lakestats.compute.reduce.prune import group_keep, prune
from lakestats.compute.reduce.wire import FREQUENCY_ROW_ARROW
from lakestats.stats import holders as holder_bits
from lakestats.stats.kinds import kind_of
from lakestats.threads import prefetch


def fold_frequency_rows(
    job: ReduceJob, files: ReadAhead, members: list[int], incomplete: np.ndarray
) -> pa.Table:
    """The group's frequency rows, combined per (column, value) and pruned
    (``FREQUENCY_ROW_ARROW``).

    Totals and bounds are summed as partitions are read; for categorical columns each
    value also keeps its holders (``stats/holders.py``), which travel as separate rows
    (count 0, bound 0) that the final aggregation joins."""
    return finish_frequency_rows(job, combine_frequency_rows(job, files, members), incomplete)


@dataclass
class CombinedRows:
    """A group's frequency rows summed per (column, value), before pruning: what does not
    depend on which columns are incomplete table-wide (a staged reduction's first pass
    makes it from the files it holds; ``finish_frequency_rows`` prunes it)."""

    combined: pa.Table  # ``COMBINED_ARROW``
    slack: np.ndarray  # per column: the unlisted values' bound on any value's count
    holders: pa.Table | None  # column_index, value, holder: every categorical column's


def combine_frequency_rows(job: ReduceJob, files: ReadAhead, members: list[int]) -> CombinedRows:
    """The group's frequency rows summed per (column, value), holders of every
    categorical column (``fold_frequency_rows`` before pruning)."""
    meta = ["distinct_count", "frequencies_count", "frequencies_min", "all_distinct"]
    categorical = np.array(
        [kind_of(job.dtype(i)) in CATEGORICAL for i in range(len(job.columns))], dtype=bool
    )
    combined: pa.Table | None = None
    pending: list[pa.Table] = []
    holders: list[pa.Table] = []
    slack = np.zeros(len(job.columns), dtype=np.int64)

    def read(p: int) -> tuple[pa.Table, list[dict]]:
        entry = job.partitions[p]
        return (
            files.read(entry, "frequencies", ["column_index", "value", "frequency"]),
            files.read(entry, "statistics", meta).to_pylist(),
        )

    for position, (frequencies, rows) in enumerate(prefetch(read, members)):
        bounds = np.zeros(len(rows), dtype=np.int64)
        for i, row in enumerate(rows):
            distinct = row["distinct_count"]
            if distinct is not None and (row["frequencies_count"] or 0) < distinct:
                bounds[i] = 1 if row["all_distinct"] else (row["frequencies_min"] or 0)
        # before skipping a partition that listed nothing: its unlisted values
        # (all distinct) still bound every value's count from above
        slack += bounds
        if frequencies.num_rows == 0:
            continue
        index = frequencies.column("column_index").to_numpy(zero_copy_only=False)
        counts = frequencies.column("frequency").to_numpy(zero_copy_only=False)
        pending.append(
            pa.table(
                {
                    "column_index": frequencies.column("column_index"),
                    "value": frequencies.column("value"),
                    "count": frequencies.column("frequency"),
                    "bound": pa.array(bounds[index]),
                }
            )
        )
        keep = categorical[index]
        if keep.any():
            holders.append(
                pa.table(
                    {
                        "column_index": pa.array(index[keep]),
                        "value": frequencies.column("value").filter(pa.array(keep)),
                        "holder": pa.array(holder_bits.pack(position, counts[keep])),
                    }
                )
            )
        if sum(t.num_rows for t in pending) > COMBINE_ROWS:
            combined = combine([combined, *pending] if combined else pending)
            pending = []
    if pending:
        combined = combine([combined, *pending] if combined else pending)
    if combined is None:
        combined = EMPTY_COMBINED
    return CombinedRows(combined, slack, pa.concat_tables(holders) if holders else None)


def finish_frequency_rows(
    job: ReduceJob, rows: CombinedRows, incomplete: np.ndarray
) -> pa.Table:
    """``combine_frequency_rows``' rows pruned with sound bounds, holders kept where the
    column is complete table-wide ("which partitions hold v" is recorded only where it is
    exact); ``FREQUENCY_ROW_ARROW``."""
    combined = prune(rows.combined, incomplete, rows.slack, group_keep(job.max_frequencies))
    batches = combined.append_column(
        "holder_list", pa.nulls(combined.num_rows, pa.list_(pa.int64()))
    ).to_batches()
    holders = rows.holders
    if holders is not None:
        exact = ~incomplete[holders.column("column_index").to_numpy(zero_copy_only=False)]
        holders = holders.filter(pa.array(exact)) if not exact.all() else holders
    if holders is not None and holders.num_rows:
        lists = holders.group_by(["column_index", "value"]).aggregate([("holder", "list")])
        zeros = pa.array(np.zeros(lists.num_rows, dtype=np.int64))
        batches += pa.table(
            {
                "column_index": lists.column("column_index"),
                "value": lists.column("value"),
                "count": zeros,
                "bound": zeros,
                "holder_list": lists.column("holder_list"),
            }
        ).to_batches()
    return pa.Table.from_batches(
        [b.cast(FREQUENCY_ROW_ARROW) for b in batches], schema=FREQUENCY_ROW_ARROW
    )


def encode_combined(rows: CombinedRows) -> bytes:
    """``CombinedRows`` as a cache entry (Arrow IPC tables and the slack, pickled)."""
    return pickle.dumps(
        {
            "combined": _ipc(rows.combined),
            "slack": rows.slack.tobytes(),
            "holders": None if rows.holders is None else _ipc(rows.holders),
        },
        protocol=5,
    )


def decode_combined(data: bytes) -> CombinedRows:
    entry = pickle.loads(data)
    holders = entry["holders"]
    return CombinedRows(
        _table(entry["combined"]),
        np.frombuffer(entry["slack"], dtype=np.int64).copy(),
        None if holders is None else _table(holders),
    )


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _table(data: bytes) -> pa.Table:
    return pa.ipc.open_file(pa.BufferReader(data)).read_all()
