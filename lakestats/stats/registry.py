"""The registry of user-defined summary statistics.

A user-defined statistic becomes one more column of ``statistics.parquet``::

    import pyarrow as pa, pyarrow.compute as pc
    from lakestats.stats.registry import SummaryStatistic, register_statistic

    register_statistic(SummaryStatistic(
        name="negative_count",
        result_type=pa.int64(),
        compute=lambda values: pc.sum(pc.less(values, 0)).as_py() or 0,
        merge=lambda a, b: a + b,
        kinds=("integer", "floating", "decimal"),
    ))

``compute`` receives the column's non-null values of one slice of a partition as an
Arrow array and returns a Python value of ``result_type``. ``merge`` combines two such
results when a large partition was split into slices; a statistic without ``merge``
is stored as null for a sliced partition rather than guessed. ``kinds`` limits the
statistic to columns of those kinds (see ``lakestats.stats.kinds.Kind``); other
columns get null. Registered statistics travel to Spark executors with the job.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from lakestats.errors import InvalidArgumentError
from lakestats.stats.statistic_fields import BUILTIN_NAMES


@dataclass(frozen=True)
class SummaryStatistic:
    name: str
    result_type: pa.DataType
    compute: Callable[[pa.Array], object]
    merge: Callable[[object, object], object] | None = None
    kinds: tuple[str, ...] | None = None


_REGISTRY: dict[str, SummaryStatistic] = {}


def reserved_names() -> set[str]:
    return set(BUILTIN_NAMES)


def register_statistic(statistic: SummaryStatistic) -> None:
    """Add (or replace) a user-defined statistic; its name becomes a column name."""
    name = statistic.name
    if not name or not name.replace("_", "a").isalnum() or keyword.iskeyword(name):
        raise InvalidArgumentError(
            f"statistic name {name!r} is not valid: use letters, digits and underscores"
        )
    if name in reserved_names():
        raise InvalidArgumentError(
            f"statistic name {name!r} is a built-in statistic; choose another name"
        )
    _REGISTRY[name] = statistic


def unregister_statistic(name: str) -> None:
    _REGISTRY.pop(name, None)


def registered_statistics() -> list[SummaryStatistic]:
    return list(_REGISTRY.values())
