"""The answers of estimates and batched statistics: rows a predicate keeps (``Estimate``,
``EstimateBatch``) and some columns' statistics per partition (``BatchStatistics``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import pyarrow as pa

from lakestats.answers.base import (
    Answer,
    Listing,
    Row,
    Tabular,
    as_json,
    frozen_row,
    jsonable,
    omit_none,
    rows_json,
    table_of,
)


def estimate_partition(
    partition: Mapping[str, object],
    name: str,
    partition_rows: int,
    row_count: float,
    lower: int,
    upper: int,
    exact: bool,
    method: str,
) -> Row:
    """One partition that can match, as ``Estimate.partitions`` lists it."""
    return MappingProxyType({
        "partition": partition, "name": name, "partition_rows": partition_rows,
        "row_count": row_count, "lower": lower, "upper": upper, "exact": exact,
        "method": method,
    })


def estimate_conjunct(
    predicate: str, row_count: float, lower: int, upper: int, exact: bool, selectivity: float
) -> Row:
    """One top-level conjunct's estimate, as ``Estimate.detail`` lists it."""
    return MappingProxyType({
        "predicate": predicate, "row_count": row_count, "lower": lower, "upper": upper,
        "exact": exact, "selectivity": selectivity,
    })


@dataclass(frozen=True)
class Estimate(Tabular):
    """Rows a predicate keeps: the estimate, sound ``lower``/``upper`` bounds, whether it
    is ``exact``, per partition that can match and per top-level conjunct (``detail``)."""

    items_field = "partitions"

    json_order = ("predicate", "row_count", "lower", "upper", "exact", "selectivity",
                  "table_rows", "partitions", "detail", "derived_version", "version",
                  "snapshot_id")

    predicate: str
    row_count: float
    lower: int
    upper: int
    exact: bool
    selectivity: float
    table_rows: int
    version: int
    snapshot_id: int | None
    partitions: tuple[Row, ...]
    detail: tuple[Row, ...]
    derived_version: int | None = field(
        default=None,
        metadata=as_json(
            omit=omit_none("derived_version"),
            flatten=True,
            encode=lambda version: {"derived": True, "derived_version": version},
        ),
    )
    """Set when the count comes from statistics computed for this predicate
    (``analyze --where``)."""


@dataclass(frozen=True)
class GroupDistinct(Answer):
    """Distinct value combinations of some columns (``estimate --group-by``), with sound
    bounds; ``column_group``: the declared group it was counted from (None: bounded by the
    columns' own distinct counts, as if independent)."""

    columns: tuple[str, ...]
    distinct_count: int
    lower: int
    upper: int
    exact: bool
    column_group: str | None
    version: int
    snapshot_id: int | None


@dataclass(frozen=True)
class EstimateBatch(Listing[Estimate]):
    """Several predicates' ``Estimate``s against one statistics version
    (``LakestatsTable.estimate_many``), in the order asked."""

    items_field = "estimates"

    estimates: tuple[Estimate, ...]
    version: int
    snapshot_id: int | None

    def totals_json(self) -> dict[str, object]:
        """``to_json()`` without each estimate's per-partition list: what a planner reads
        (a table of thousands of partitions would send a list as long with every answer)."""
        trimmed = tuple(replace(e, partitions=()) for e in self.estimates)
        data = replace(self, estimates=trimmed).to_json()
        for estimate in data["estimates"]:  # type: ignore[attr-defined]
            del estimate["partitions"]
        return data

    def to_arrow(self) -> pa.Table:
        """One row per predicate: its estimate and bounds."""
        return table_of(
            [
                {k: v for k, v in e.to_json().items() if k not in ("partitions", "detail")}
                for e in self.estimates
            ]
        )


@dataclass(frozen=True)
class PartitionColumns(Answer):
    partition: Mapping[str, object]
    name: str
    row_count: int
    columns: tuple[Row, ...]


@dataclass(frozen=True)
class BatchStatistics(Answer):
    """Some columns' statistics for the table and every partition ``where`` can match
    (``stats``), or those of ``analyze --where``'s derived entry (``derived``)."""

    row_count: int | None = field(metadata=as_json(group="table"))
    version: int = field(metadata=as_json(group="table"))
    snapshot_id: int | None = field(metadata=as_json(group="table"))
    partitions_total: int = field(metadata=as_json(group="table", name="partitions"))
    partitions_matched: int = field(metadata=as_json(group="table"))
    columns: tuple[Row, ...] = field(metadata=as_json(group="table", encode=rows_json))
    partitions: tuple[PartitionColumns, ...] | None = field(
        metadata=as_json(omit=omit_none("partitions")),
    )
    derived_predicate: str | None = field(
        default=None,
        metadata=as_json(
            omit=omit_none("derived_predicate"),
            flatten=True,
            encode=lambda predicate: {"derived": True, "predicate": predicate},
        ),
    )

    @classmethod
    def of(
        cls, result: Mapping[str, Any], derived_predicate: str | None = None
    ) -> BatchStatistics:
        """The answer of ``lakestats.query.column_stats``' result."""
        table = result["table"]
        parts = result.get("partitions")
        return cls(
            row_count=table["row_count"],
            version=table["version"],
            snapshot_id=table["snapshot_id"],
            partitions_total=table["partitions"],
            partitions_matched=table["partitions_matched"],
            columns=tuple(frozen_row(c) for c in table["columns"]),
            partitions=None
            if parts is None
            else tuple(
                PartitionColumns(
                    partition=p["partition"],
                    name=p["name"],
                    row_count=p["row_count"],
                    columns=tuple(frozen_row(c) for c in p["columns"]),
                )
                for p in parts
            ),
            derived_predicate=derived_predicate,
        )

    def to_arrow(self) -> pa.Table:
        """One row per partition and column."""
        return table_of(
            [
                {"partition": p.name, "row_count": p.row_count, **jsonable(c)}  # type: ignore[dict-item]
                for p in self.partitions or ()
                for c in p.columns
            ]
        )


@dataclass(frozen=True)
class DerivedStatistics(Answer):
    """``analyze --where``'s derived entry as the service answers it: the statistics of the
    rows the predicate keeps, and the statistics version they belong to."""

    statistics: BatchStatistics = field(metadata=as_json(flatten=True))
    version: int
