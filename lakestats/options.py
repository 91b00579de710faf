"""What ``analyze`` and ``sample create`` are asked to do: typed, frozen, validated once.

``AnalyzeOptions`` and ``SampleOptions`` are the one home of every default. Each field's
metadata says how the command line spells it (``flag``: a ``Flag``, and ``help``;
``lakestats.cli`` derives its flags, defaults and help from them), whether a version's
manifest records it (``record``: ``always``, ``when_set`` = only when not the default, so
versions written before the field existed read the same) and whether it changes a
partition's statistics files (``affects_partition_stats``: a partition computed with
other values of such a field is never reused by an incremental analyze).

Bad values are one ``InvalidArgumentError`` line naming the flag, raised when the object
is built: the facade, the CLI and the Spark job never validate again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lakestats.errors import InvalidArgumentError

MIB = 1024 * 1024
MAX_BINS = 100_000
DEFAULT_MAX_SLICE_BYTES = 256 * MIB  # also the slice size of sample tasks
DEFAULT_SAMPLE_FRACTION = 0.01

# how a field's command-line text is read (``lakestats.cli`` maps each to a parser)
CLI_COUNT = "count"  # a whole number 0 or more
CLI_INT = "int"  # any whole number
CLI_FLOAT = "float"
CLI_TEXT = "text"
CLI_COLUMNS = "columns"  # comma-separated names
CLI_SWITCH = "switch"  # present or not
CLI_GROUPS = "groups"  # repeatable; each one comma-separated names

RECORD_ALWAYS = "always"
RECORD_WHEN_SET = "when_set"


@dataclass(frozen=True)
class Flag:
    """How the command line spells a field."""

    name: str  # --bins
    reads: str  # how its text is read: one of the CLI_* kinds
    scale: int = 1  # field units per flag unit (--max-slice-mb: MiB)
    negate: bool = False  # a switch that sets the field False (--partitions-only)
    group: str | None = None  # flags of one group are mutually exclusive


def option(
    default: Any,  # noqa: ANN401 - any field's default
    *,
    help: str,
    flag: Flag | None = None,
    record: str | None = None,
    affects_partition_stats: bool = False,
) -> Any:  # noqa: ANN401 - a dataclass field
    """A dataclass field with what the CLI, the manifest and reuse need to know of it."""
    return field(
        default=default,
        metadata={
            "help": help,
            "flag": flag,
            "record": record,
            "affects_partition_stats": affects_partition_stats,
        },
    )


def _check_int(flag: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{flag} must be a whole number, got {value!r}")


def _check_bool(flag: str, value: object) -> None:
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{flag} must be True or False, got {value!r}")


@dataclass(frozen=True)
class AnalyzeOptions:
    """What one ``analyze`` computes (``table.analyze(options)``, ``lakestats analyze``)."""

    columns: tuple[str, ...] | None = option(
        None,
        flag=Flag("--columns", CLI_COLUMNS),
        help="only these columns, comma-separated",
        record=RECORD_ALWAYS,
        affects_partition_stats=True,
    )
    bins: int = option(
        1000,
        flag=Flag("--bins", CLI_COUNT),
        help="histogram bins",
        record=RECORD_ALWAYS,
        affects_partition_stats=True,
    )
    max_frequencies: int = option(
        10_000,
        flag=Flag("--max-frequencies", CLI_COUNT),
        help="exact frequencies up to this many distinct values",
        record=RECORD_ALWAYS,
        affects_partition_stats=True,
    )
    max_slice_bytes: int = option(
        DEFAULT_MAX_SLICE_BYTES,
        flag=Flag("--max-slice-mb", CLI_COUNT, scale=MIB),
        help="split partitions larger than this into slices",
        record=RECORD_ALWAYS,  # how the work was cut, not what it computed
    )
    reduce_cache_from: int = option(
        64,
        flag=Flag("--reduce-cache-from", CLI_COUNT),
        help="from this many partitions, keep the reduction's per-group results for the next "
        "incremental analyze (0: always); below it they cost more bytes than the time they save",
    )
    exact: bool = option(
        False,
        flag=Flag("--exact", CLI_SWITCH),
        help="exact table-level distinct counts, frequencies and ranks (stages value counts)",
        record=RECORD_WHEN_SET,  # versions written before --exact existed stay reusable
        affects_partition_stats=True,  # partitions stage values.parquet
    )
    column_groups: tuple[tuple[str, ...], ...] = option(
        (),
        flag=Flag("--column-groups", CLI_GROUPS),
        help="joint statistics of these columns, comma-separated (repeat the flag for more "
        "groups): their most common value combinations, distinct combinations and "
        "functional dependencies; `auto`: also pairs of low-cardinality columns found in "
        "the data",
        record=RECORD_WHEN_SET,  # versions written before groups existed stay reusable
        affects_partition_stats=True,  # partitions write groups.parquet
    )
    snapshot_id: int | None = option(
        None, flag=Flag("--snapshot", CLI_INT), help="table snapshot id (default: current)"
    )
    table_level: bool = option(
        True,
        flag=Flag("--partitions-only", CLI_SWITCH, negate=True),
        help="write partition files only, no table-level reduction",
    )
    where: str | None = option(
        None,
        flag=Flag("--where", CLI_TEXT),
        help="statistics of the rows this SQL predicate keeps, stored as a derived entry "
        "(the table's own statistics are not replaced)",
    )
    from_sample: bool = option(
        False,
        flag=Flag("--from-sample", CLI_SWITCH),
        help="estimate the statistics from the stored sample (`lakestats sample create`)",
    )
    puffin: bool = option(
        True,
        flag=Flag("--no-puffin", CLI_SWITCH, negate=True),
        help="Iceberg tables: publish no Puffin statistics file (theta sketches, ndv) "
        "for the snapshot in the table's metadata",
        record=RECORD_WHEN_SET,
        # Iceberg partitions store theta sketches for it: a version says so
        # (``extra["theta_sketches"]``), and reuse compares that, on Iceberg tables only
    )
    progress: bool = option(
        False, help="a progress bar on stderr (the CLI: when stderr is a terminal, no --json)"
    )

    def __post_init__(self) -> None:
        columns = self.columns
        if columns is not None and not isinstance(columns, tuple):
            if isinstance(columns, str) or not hasattr(columns, "__iter__"):
                raise InvalidArgumentError(
                    f"--columns must be a list of column names, got {columns!r}"
                )
            columns = tuple(columns)
        if columns is not None:
            if not all(isinstance(c, str) and c for c in columns):
                raise InvalidArgumentError(
                    f"--columns must be a list of column names, got {list(columns)!r}"
                )
            columns = columns or None  # an empty list: every column, as before
        object.__setattr__(self, "columns", columns)
        object.__setattr__(self, "column_groups", _groups_of(self.column_groups))
        for name in ("bins", "max_frequencies", "max_slice_bytes", "reduce_cache_from"):
            _check_int(flag_of(AnalyzeOptions, name), getattr(self, name))
        if self.snapshot_id is not None:
            _check_int("--snapshot", self.snapshot_id)
        for name in ("exact", "table_level", "from_sample", "puffin", "progress"):
            _check_bool(flag_of(AnalyzeOptions, name), getattr(self, name))
        if self.where is not None and not isinstance(self.where, str):
            raise InvalidArgumentError(f"--where must be SQL text, got {self.where!r}")
        if not 1 <= self.bins <= MAX_BINS:
            raise InvalidArgumentError(f"--bins must be between 1 and {MAX_BINS}, got {self.bins}")
        if self.max_frequencies < 0:
            raise InvalidArgumentError(
                f"--max-frequencies must be 0 or more, got {self.max_frequencies}"
            )
        if self.reduce_cache_from < 0:
            raise InvalidArgumentError(
                f"--reduce-cache-from must be 0 or more, got {self.reduce_cache_from}"
            )
        if self.max_slice_bytes < 1:
            raise InvalidArgumentError("the slice size must be positive")
        if self.from_sample and (self.snapshot_id is not None or not self.table_level):
            raise InvalidArgumentError(
                "--from-sample analyzes the sample's snapshot at table level: drop "
                "--snapshot / --as-of / --partitions-only"
            )
        if self.from_sample and (self.where is not None or self.exact):
            raise InvalidArgumentError(
                "--from-sample estimates the table's statistics from its sample; --where and "
                "--exact need the table's rows: drop one of them"
            )

    @classmethod
    def build(
        cls, options: AnalyzeOptions | None = None, overrides: Mapping[str, object] | None = None
    ) -> AnalyzeOptions:
        """``options`` (default: every default) with ``overrides`` (field names) applied;
        an unknown name is one line listing the known ones."""
        return _build(cls, options, overrides or {})

    def record(self) -> dict[str, object]:
        """The ``options`` a version's manifest stores (the same JSON as before this class:
        recorded fields in declaration order, lists for tuples)."""
        out: dict[str, object] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.metadata["record"] == RECORD_ALWAYS or (
                f.metadata["record"] == RECORD_WHEN_SET and value != f.default
            ):
                out[f.name] = _listed(value)
        return out

    @classmethod
    def from_record(cls, record: Mapping[str, object]) -> AnalyzeOptions | None:
        """The options a version recorded, or None when the record is not one this code
        wrote for a full analyze (a key it does not know, a missing one, a bad value)."""
        values: dict[str, object] = {}
        for f in dataclasses.fields(cls):
            kind = f.metadata["record"]
            if kind is None:
                continue
            if f.name in record:
                values[f.name] = record[f.name]
            elif kind == RECORD_ALWAYS:
                return None
        if set(record) - set(values):
            return None
        try:
            return cls(**values)  # type: ignore[arg-type]
        except (InvalidArgumentError, TypeError):
            return None

    @property
    def declared_groups(self) -> tuple[tuple[str, ...], ...]:
        """The column groups named (``auto`` left out)."""
        return tuple(g for g in self.column_groups if g != AUTO_GROUPS)

    @property
    def auto_groups(self) -> bool:
        """Whether pairs of low-cardinality columns are found in the data too."""
        return AUTO_GROUPS in self.column_groups

    def partition_stats_key(self) -> tuple[object, ...]:
        """The values a partition's statistics files depend on: equal keys, reusable files."""
        return tuple(
            getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.metadata["affects_partition_stats"]
        )


@dataclass(frozen=True)
class SampleOptions:
    """How ``sample create`` draws (``table.sample.create``, ``lakestats sample create``)."""

    rows: int | None = option(
        None, flag=Flag("--rows", CLI_INT, group="size"), help="sample this many rows (create)"
    )
    fraction: float | None = option(
        None,
        flag=Flag("--fraction", CLI_FLOAT, group="size"),
        help=f"sample this fraction, in (0, 1] (create; default {DEFAULT_SAMPLE_FRACTION} "
        "without --rows)",
    )
    seed: int = option(0, flag=Flag("--seed", CLI_INT), help="hash seed (create)")
    max_slice_bytes: int = option(
        DEFAULT_MAX_SLICE_BYTES, help="bytes of data files one read of a partition holds"
    )

    def __post_init__(self) -> None:
        if self.rows is not None:
            _check_int("--rows", self.rows)
        if self.fraction is not None and (
            isinstance(self.fraction, bool) or not isinstance(self.fraction, int | float)
        ):
            raise InvalidArgumentError(f"--fraction must be a number, got {self.fraction!r}")
        _check_int("--seed", self.seed)
        _check_int("the slice size", self.max_slice_bytes)
        if self.rows is not None and self.fraction is not None:
            raise InvalidArgumentError("pass --rows or --fraction, not both")
        if self.rows is not None and self.rows <= 0:
            raise InvalidArgumentError(
                f"--rows must be a positive number of rows, got {self.rows}"
            )
        if self.fraction is not None and not 0 < self.fraction <= 1:
            raise InvalidArgumentError(
                f"--fraction must be in (0, 1] (0.01 is a 1 % sample), got {self.fraction}"
            )
        if self.max_slice_bytes < 1:
            raise InvalidArgumentError("the slice size must be positive")

    @classmethod
    def build(
        cls, options: SampleOptions | None = None, overrides: Mapping[str, object] | None = None
    ) -> SampleOptions:
        return _build(cls, options, overrides or {})

    @property
    def drawn_fraction(self) -> float | None:
        """The fraction drawn: the one given, the default without ``rows``, else None."""
        if self.fraction is None and self.rows is None:
            return DEFAULT_SAMPLE_FRACTION
        return self.fraction


def _listed(value: object) -> object:
    """Tuples (nested too) as lists: the JSON a manifest stores."""
    return [_listed(v) for v in value] if isinstance(value, tuple) else value


AUTO_GROUPS = ("auto",)
"""In ``column_groups``: also the pairs of low-cardinality columns found in the data
(``stats/auto_groups.py``)."""


def _groups_of(value: object) -> tuple[tuple[str, ...], ...]:
    """``column_groups`` as a tuple of tuples of names, each of two or more distinct
    columns (a group of one column is its own column's statistics), or ``AUTO_GROUPS``."""
    if value is None:
        return ()
    if isinstance(value, str) or not hasattr(value, "__iter__"):
        raise InvalidArgumentError(
            f"--column-groups must be a list of groups of column names, got {value!r}"
        )
    groups: list[tuple[str, ...]] = []
    for group in value:
        names = tuple(group.split(",")) if isinstance(group, str) else group
        if isinstance(names, tuple | list) and [*names] == list(AUTO_GROUPS):
            if AUTO_GROUPS not in groups:
                groups.append(AUTO_GROUPS)
            continue
        if isinstance(names, str) or not hasattr(names, "__iter__"):
            raise InvalidArgumentError(
                f"--column-groups: a group is a list of column names, got {group!r}"
            )
        names = tuple(n.strip() if isinstance(n, str) else n for n in names)
        if not all(isinstance(n, str) and n for n in names):
            raise InvalidArgumentError(
                f"--column-groups: a group is a list of column names, got {list(names)!r}"
            )
        if len(set(names)) < 2:
            raise InvalidArgumentError(
                f"--column-groups {','.join(names)!r}: a group needs two or more distinct "
                "columns"
            )
        if len(set(names)) != len(names):
            raise InvalidArgumentError(
                f"--column-groups {','.join(names)!r}: a column appears twice in the group"
            )
        if names not in groups:
            groups.append(names)
    return tuple(groups)


def flag_of(cls: type, name: str) -> str:
    """The command-line flag of field ``name`` (its name when it has none)."""
    found = next(f for f in dataclasses.fields(cls) if f.name == name)
    return found.metadata["flag"].name if found.metadata["flag"] else name


def _build(cls: type, options: object | None, overrides: Mapping[str, object]):  # noqa: ANN202
    known = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(overrides) - set(known))
    if unknown:
        raise InvalidArgumentError(
            f"unknown {cls.__name__} option {unknown[0]!r}; the options are: {', '.join(known)}"
        )
    base = options if options is not None else cls()
    if not isinstance(base, cls):
        raise InvalidArgumentError(f"expected {cls.__name__}, got {type(base).__name__}")
    return dataclasses.replace(base, **overrides) if overrides else base
