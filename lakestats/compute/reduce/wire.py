"""Every Spark wire schema of the reduction, and how values cross it.

Contract: what a reduction's Spark stages exchange, in one place. Per-column
contributions (scalar states, re-binned histograms) travel as ``STATE_SCHEMA`` rows, one
per group and column (merged in group order: the same merges as in one process), their
value as bytes made by the stage's ``Codec``; frequency rows as
``FREQUENCY_ROW_SCHEMA`` (``FREQUENCY_ROW_ARROW`` in Arrow), summed per (column, value) by
Spark's ``groupBy`` into ``AGGREGATED_ARROW``; a finalized column as
``FREQUENCY_GROUP_SCHEMA`` (a pickled ``FrequencyResult``); the writing task answers
``WRITTEN_SCHEMA``, a one-task reduction ``ONE_TASK_SCHEMA`` and the one-task analyze
``computed_and_reduced_schema()``. Pickles only cross process boundaries: inside one
process the stages hand each other Python objects.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lakestats.stats.arrays import binary_array, integer_array
from lakestats.stats.table_frequencies import FrequencyResult

STATE_SCHEMA = "column_index int, group_index int, state binary"
FREQUENCY_ROW_SCHEMA = (
    "column_index int, value binary, count long, bound long, holder_list array<long>"
)
FREQUENCY_ROW_ARROW = pa.schema(
    [
        ("column_index", pa.int32()),
        ("value", pa.binary()),
        ("count", pa.int64()),
        ("bound", pa.int64()),
        ("holder_list", pa.list_(pa.int64())),
    ]
)
AGGREGATED_ARROW = pa.schema(
    [
        ("column_index", pa.int32()),
        ("value", pa.binary()),
        ("total", pa.int64()),
        ("bound_present", pa.int64()),
        ("holders", pa.list_(pa.int64())),
    ]
)
"""One column's frequency rows summed per value (``spark.py``: Spark's ``groupBy``;
``combine.aggregate_column``: the same in Arrow)."""
FREQUENCY_GROUP_SCHEMA = "column_index int, payload binary"
WRITTEN_SCHEMA = "bytes_written long"
ONE_TASK_SCHEMA = "bytes_written long, cache string"


def computed_and_reduced_schema() -> str:
    """A one-task analyze's answer: the partition's summary, then the reduction's."""
    from lakestats.compute.tasks import SUMMARY_SCHEMA

    return f"{SUMMARY_SCHEMA}, table_bytes long, cache string"


@dataclass(frozen=True)
class Codec:
    """How one column's contribution to a per-column stage becomes bytes and back."""

    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]


def _pickled(value: object) -> bytes:
    return pickle.dumps(value, protocol=5)


def _float_bytes(counts: np.ndarray) -> bytes:
    return np.asarray(counts).tobytes()


def _floats(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=np.float64)


STATES = Codec(_pickled, pickle.loads)
"""Scalar states: pickled (live sketches are serialized by ``ScalarState.__getstate__``)."""
HISTOGRAMS = Codec(_float_bytes, _floats)
"""Re-binned histogram counts: float64 bytes."""


def per_column_batch(codec: Codec, values: dict[int, Any], group: int = -1) -> pa.RecordBatch:
    """``STATE_SCHEMA`` rows of per-column ``values`` (of one group, or merged: -1)."""
    return pa.RecordBatch.from_arrays(
        [
            integer_array(list(values), pa.int32()),
            integer_array([group] * len(values), pa.int32()),
            binary_array([codec.encode(v) for v in values.values()]),
        ],
        names=["column_index", "group_index", "state"],
    )


def per_column_values(codec: Codec, rows: Iterable[Any]) -> dict[int, Any]:
    """``STATE_SCHEMA`` rows (collected Spark rows or dicts) back as per-column values."""
    return {row["column_index"]: codec.decode(row["state"]) for row in rows}


def frequency_payload(index: int, result: FrequencyResult) -> pa.Table:
    """A finalized column as one ``FREQUENCY_GROUP_SCHEMA`` row."""
    return pa.table(
        {
            "column_index": pa.array([index], pa.int32()),
            "payload": pa.array([pickle.dumps(result, protocol=5)], pa.binary()),
        }
    )


def frequency_results(batches: Iterable[pa.RecordBatch]) -> dict[int, FrequencyResult]:
    """``FREQUENCY_GROUP_SCHEMA`` batches back as each column's ``FrequencyResult``."""
    results: dict[int, FrequencyResult] = {}
    for batch in batches:
        for index, payload in zip(
            batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True
        ):
            results[index] = pickle.loads(payload)
    return results
