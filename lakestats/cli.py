"""The ``lakestats`` command line: a thin layer over ``lakestats.api``.

Every failure prints one line (``lakestats: error: …``) and exits non-zero; set
``LAKESTATS_DEBUG=1`` to see the traceback. Bad arguments get the same one line (``--help``
prints the usage); an unexpected exception too, named by its type. A closed stdout (``| head``)
ends the command quietly, as Unix tools do. Spark's own logs go to a file, named by
``--verbose`` (see ``lakestats.compute.session``).

``analyze``'s and ``sample``'s flags, defaults and help come from ``lakestats.options``; the
settings (``lakestats.config``) are built once per command from the environment, the config
file and the global and Spark flags.

Over 400 lines on purpose: one small function per command plus the parser; splitting would
scatter the commands.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from lakestats import api, config, display
from lakestats import options as opts
from lakestats.errors import InvalidArgumentError, LakestatsError
from lakestats.options import AnalyzeOptions, SampleOptions

if TYPE_CHECKING:
    from lakestats.answers import TableStatistics


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as the one ``lakestats: error:`` line (no usage block)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog if self.prog.startswith("lakestats") else "lakestats"
        _fail(f"{message} (see `{command} --help`)")
        sys.exit(2)


def _fail(message: str) -> None:
    first = message.strip().splitlines()[0] if message.strip() else "failed"
    print(f"lakestats: error: {first}", file=sys.stderr)


def _columns(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [c.strip() for c in text.split(",") if c.strip()]
    if not names:
        raise InvalidArgumentError("--columns is empty: list column names separated by commas")
    return names


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number 0 or more, got {text!r}")
    return value


def _port(text: str) -> int:
    value = _positive(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"a TCP port is 0 to 65535, got {text!r}")
    return value


def _table(args: argparse.Namespace) -> api.LakestatsTable:
    table = api.open_table(
        args.table, stats_root=args.stats_root, catalog=args.catalog, warehouse=args.warehouse
    )
    if getattr(args, "as_of", None) is not None:
        if args.snapshot is not None:
            raise InvalidArgumentError("pass --snapshot or --as-of, not both")
        args.snapshot = api.snapshot_as_of(table.format, args.as_of)
    return table


def _timestamp_ms(text: str) -> int:
    """``--as-of`` (``api.parse_as_of``), as argparse's one-line error when it is bad."""
    try:
        return api.parse_as_of(text)
    except InvalidArgumentError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _remote_url(text: str) -> str:
    if not text.startswith("sc://"):
        raise argparse.ArgumentTypeError(
            f"expected a Spark Connect URL such as sc://host:15002, got {text!r}"
        )
    return text


def _spark_flags(p: argparse.ArgumentParser) -> None:
    """``--master`` / ``--remote`` for the commands that start Spark."""
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--master",
        help="Spark master, e.g. spark://host:7077 (default $LAKESTATS_SPARK_MASTER, local[*])",
    )
    where.add_argument(
        "--remote",
        type=_remote_url,
        help="Spark Connect server, sc://host:port (default $LAKESTATS_SPARK_REMOTE)",
    )
    p.add_argument(
        "--ship-lakestats",
        action="store_true",
        default=None,
        help="with --remote: send this lakestats package with the session (addArtifacts) "
        "for a server whose Python workers lack it; see docs/deploy.md",
    )


def settings_of(args: argparse.Namespace) -> config.Settings:
    """The command's settings: environment, then the config file, then the flags
    (``--master`` overrides an inherited remote, ``--remote`` wins over any master)."""
    return config.load(
        arguments={
            "config_file": getattr(args, "config", None),
            "spark_conf": config.parse_spark_conf(getattr(args, "spark_conf", None)),
            "spark_master": getattr(args, "master", None),
            "spark_remote": getattr(args, "remote", None),
            "ship_lakestats": getattr(args, "ship_lakestats", None),
            "catalog": getattr(args, "catalog", None),
            "warehouse": getattr(args, "warehouse", None),
        }
    )


_READERS = {
    opts.CLI_COUNT: lambda text: _positive(text),
    opts.CLI_INT: int,
    opts.CLI_FLOAT: float,
    opts.CLI_TEXT: str,
    opts.CLI_COLUMNS: str,  # split by _columns when the options are built (one error line)
}


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def add_option_flags(p: argparse.ArgumentParser, cls: type) -> None:
    """The flags of ``cls``'s fields (``lakestats.options``): name, default, help."""
    groups: dict[str, argparse._MutuallyExclusiveGroup] = {}
    for f in dataclasses.fields(cls):
        flag: opts.Flag | None = f.metadata["flag"]
        if flag is None:
            continue
        target = p
        if flag.group:
            if flag.group not in groups:  # one group per name: an empty one breaks --help
                groups[flag.group] = p.add_mutually_exclusive_group()
            target = groups[flag.group]
        dest = _dest(flag.name)
        if flag.reads == opts.CLI_SWITCH:
            target.add_argument(flag.name, dest=dest, action="store_true", help=f.metadata["help"])
            continue
        default = f.default if f.default is None else f.default // flag.scale
        shown = f" (default {default})" if default is not None else ""
        target.add_argument(
            flag.name,
            dest=dest,
            type=_READERS[flag.reads],
            default=default,
            help=f.metadata["help"] + shown,
        )


def options_from_args(args: argparse.Namespace, cls: type, **fixed: object):  # noqa: ANN201
    """A ``cls`` (``AnalyzeOptions``, ``SampleOptions``) from its flags, plus ``fixed``."""
    values: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        flag: opts.Flag | None = f.metadata["flag"]
        if flag is None:
            continue
        value = getattr(args, _dest(flag.name))
        if flag.reads == opts.CLI_SWITCH:
            value = not value if flag.negate else value
        elif flag.reads == opts.CLI_COLUMNS:
            value = _columns(value)  # type: ignore[arg-type]
        elif value is not None and flag.scale != 1:
            value = value * flag.scale
        values[f.name] = value
    return cls(**values, **fixed)


def _print_json(data: object) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False))


def cmd_analyze(args: argparse.Namespace) -> int:
    table = _table(args)  # --as-of becomes --snapshot here
    options = options_from_args(
        args, AnalyzeOptions, progress=not args.json and sys.stderr.isatty()
    )
    result = table.analyze(options)
    if args.json:
        _print_json(result.to_json())
    elif result.unchanged:
        print(
            f"nothing to analyze: statistics version {result.version} already describes "
            f"snapshot {result.snapshot_id} ({result.partitions_reused} partitions, "
            f"{display.count(result.row_count)} rows, none changed)"
        )
    else:
        print(
            f"analyzed {result.partitions_computed} partitions "
            f"({display.count(result.row_count)} rows), "
            f"reused {result.partitions_reused}"
            + (
                f" (recomputed {result.partitions_repaired} whose files were missing or damaged)"
                if result.partitions_repaired
                else ""
            )
            + f"; statistics version {result.version} "
            f"at {result.stats_root}"
            + (" (sampled: estimated from the stored sample)" if args.from_sample else "")
        )
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    """``sample create | refresh | show``: the stored sample (``lakestats.sample_ops``)."""
    default = SampleOptions()
    if args.action != "create" and (args.rows, args.fraction, args.seed) != (
        default.rows,
        default.fraction,
        default.seed,
    ):
        raise InvalidArgumentError(
            f"--rows, --fraction and --seed are for `sample create`, not `sample {args.action}`"
        )
    table = _table(args)
    if args.action == "show":
        data = table.sample.manifest().to_json()
        if args.json:
            _print_json(data)
        else:
            print(
                f"sample of {args.table}: {data['sample_rows']} of {data['population']} rows "
                f"in {len(data['partitions'])} partitions, snapshot {data['snapshot_id']}, "
                f"seed {data['seed']}, drawn {data['created_at']}"
            )
            sibling = data.get("sibling") or {}
            where = sibling.get("metadata_location") or sibling.get("location")
            print(f"stored as: {sibling['format']} table {where}" if sibling else
                  "stored as: the Parquet directory sample/data under the statistics root")
        return 0
    if args.action == "create":
        result = table.sample.create(options_from_args(args, SampleOptions))
    else:
        result = table.sample.refresh()
    if args.json:
        _print_json(result.to_json())
    else:
        if result.resampled_because:
            print(f"lakestats: {result.resampled_because}", file=sys.stderr)
        print(
            f"sampled {result.sample_rows} of {result.population} rows (snapshot "
            f"{result.snapshot_id}): {result.partitions_sampled} partitions sampled, "
            f"{result.partitions_kept} kept, {result.partitions_removed} removed, "
            f"{result.files_read} files and {result.bytes_read} bytes of data read"
        )
    return 0


def _answer(args: argparse.Namespace, answer: object, text: Callable[[], None]) -> int:
    """``answer.to_json()`` with ``--json``, else its text form."""
    if args.json:
        _print_json(answer.to_json())  # type: ignore[attr-defined]
    else:
        text()
    return 0


def cmd_partitions(args: argparse.Namespace) -> int:
    found = _table(args).partitions()

    def text() -> None:
        from lakestats.preview import TextColumn, text_table

        text_table(
            [
                TextColumn("partition", 12, 40, 0),
                TextColumn("rows", 6, 15, 0, right=True),
                TextColumn("statistics file", 20, 120, 1),
            ],
            [
                [p.name or "(all)", display.count(p.row_count), p.files.get("statistics", "")]
                for p in found
            ],
            title=f"{args.table}: {len(found)} partitions (statistics version {found.version})",
        )

    return _answer(args, found, text)


def cmd_show(args: argparse.Namespace) -> int:
    table = _table(args)
    columns = _columns(args.columns)
    if not args.partition and args.snapshot is None and _counts_only(table, args):
        return 0
    if not args.partition and (args.snapshot is not None or table.has_table_statistics()):
        level = table.table_statistics(args.snapshot, columns)
        if args.json:
            _print_json(level.to_json())
            return 0
        from lakestats.preview import render_statistics

        rows = level.to_json()["columns"]
        render_statistics(
            rows,
            title=_table_title(args.table, level),
            histograms=_histograms(table, None, rows, args.snapshot),
        )
        return 0
    found = table.partition_statistics(args.partition, columns)
    if args.json:
        _print_json(found.to_json())
        return 0
    from lakestats.preview import render_statistics

    rows = found.to_json()["columns"]
    render_statistics(
        rows,
        title=f"{args.table} {found.name or ''} ({display.count(found.row_count)} rows, "
        f"statistics version {found.version})",
        histograms=_histograms(table, found.name or None, rows),
    )
    return 0


def cmd_profile(args: argparse.Namespace) -> int:
    table = _table(args)
    found = table.profile(args.snapshot)

    def text() -> None:
        from lakestats.preview import render_profile

        rows = [p.row_count for p in table.partitions()] if found.partitions > 1 else []
        render_profile(found, args.table, partition_rows=rows)

    return _answer(args, found, text)


def _table_title(name: str, level: TableStatistics) -> str:
    """``show``'s title: the statistics' own snapshot and rows; when stale, where the
    table is now."""
    info = level.staleness
    title = (
        f"{name} (table level, snapshot {info.statistics_snapshot_id}, "
        f"{display.count(level.row_count)} rows, statistics version {level.version})"
    )
    if info.stale:
        behind = (
            f", {info.snapshots_behind} snapshots behind" if info.snapshots_behind else ""
        )
        title += f" [stale: the table is at snapshot {info.snapshot_id}{behind}]"
    if level.kind == api.VersionKind.SAMPLED:
        drawn = level.sample or {}
        title += (
            f" [sampled: {display.count(drawn.get('sample_rows'))} rows of snapshot "
            f"{drawn.get('snapshot_id')}]"
        )
    return title


def _counts_only(table: api.LakestatsTable, args: argparse.Namespace) -> bool:
    """A latest version that ``ANALYZE … NOSCAN`` wrote into a root without column
    statistics: say what it recorded (rows, data size) and how to get the rest."""
    summary = table.summary()
    if summary.kind != api.VersionKind.NOSCAN or summary.partitions or summary.table_level:
        return False
    data = {**summary.to_json(), "columns": []}
    if args.json:
        _print_json(data)
        return True
    print(
        f"{args.table}: {display.count(summary.row_count)} rows in "
        f"{display.count(summary.size_in_bytes)} bytes of data files (statistics version "
        f"{summary.version}, ANALYZE ... NOSCAN: counts from the table's metadata, no column "
        "statistics; `lakestats analyze` computes them)"
    )
    return True


def _histograms(
    table: api.LakestatsTable, partition: str | None, rows: list[dict], snapshot: int | None = None
) -> dict[str, list[int]] | None:
    """Bin counts for the text view of ``show`` (the latest version's; none for an older
    snapshot's table statistics, whose version the lookups do not address)."""
    if snapshot is not None:
        return None
    return {
        r["name"]: table.histogram(r["name"], partition).counts
        for r in rows
        if r.get("histogram_bins")
    }


def cmd_frequencies(args: argparse.Namespace) -> int:
    found = _table(args).frequencies(args.column, args.partition, args.top)

    def text() -> None:
        # ``≈``: the stored counts are estimates (merged from truncated lists, sampled)
        mark = "" if found.exact else "≈"
        for item in found.to_json()["frequencies"]:
            print(f"{mark + display.count(item['frequency']):>14}  {item['value']}")

    return _answer(args, found, text)


def cmd_rank(args: argparse.Namespace) -> int:
    found = _table(args).rank(args.column, args.value)

    def text() -> None:
        print(
            f"below {display.count(found.below)}  equal {display.count(found.equal)}  "
            f"above {display.count(found.above)}  percentile {display.number(found.percentile)}"
        )

    return _answer(args, found, text)


def cmd_quantile(args: argparse.Namespace) -> int:
    found = _table(args).quantile(args.column, args.p)
    return _answer(args, found, lambda: print(found.to_json()["value"]))


def cmd_histogram(args: argparse.Namespace) -> int:
    found = _table(args).histogram(args.column, args.partition, args.start, args.stop)

    def text() -> None:
        mark = "" if found.exact else "≈"
        bins = [b.to_json() for b in found]
        labels = display.bin_labels(bins, closed_last=found.ends_with_last_bin)
        width = max((len(label) for label in labels), default=0)
        for label, b in zip(labels, bins, strict=True):
            print(f"{label:<{width}}  {mark}{display.count(b['count'])}")

    return _answer(args, found, text)


def cmd_partitions_containing(args: argparse.Namespace) -> int:
    holders = _table(args).partitions_containing(args.column, args.value)

    def text() -> None:
        for holder in holders:
            print(f"{display.count(holder.frequency):>14}  {holder.name}")

    return _answer(args, holders, text)


def cmd_stats(args: argparse.Namespace) -> int:
    columns = _columns(args.columns)
    assert columns is not None  # required by the parser
    found = _table(args).stats(
        columns, where=args.where, by_partition=args.by_partition, snapshot_id=args.snapshot
    )
    if args.json:
        _print_json(found.to_json())
        return 0
    from lakestats.preview import TextColumn, text_table

    data = found.to_json()
    head = (
        f"{args.table}: {display.count(found.row_count)} rows, {found.partitions_matched} of "
        f"{found.partitions_total} partitions (statistics version {found.version})"
    )
    if found.derived_predicate is not None:
        head += f"; statistics of the rows where {found.derived_predicate}"
    rows = [
        ["(table)", c["name"], display.count(found.row_count)]
        + [display.count(c.get(k)) for k in ("null_count", "distinct_count")]
        + [display.number(c.get(k)) for k in ("min", "max")]
        for c in data["table"]["columns"]
    ]
    for part in data.get("partitions", []):
        rows += [
            [part["name"] or "(all)", c["name"], display.count(part["row_count"])]
            + [display.count(c.get(k)) for k in ("null_count", "distinct_count")]
            + [display.number(c.get(k)) for k in ("min", "max")]
            for c in part["columns"]
        ]
    text_table(
        [
            TextColumn("partition", 10, 30, 0),
            TextColumn("column", 6, 20, 0),
            TextColumn("rows", 5, 13, 1, right=True),
            TextColumn("nulls", 5, 13, 2, right=True),
            TextColumn("distinct", 8, 13, 2, right=True),
            TextColumn("min", 6, 16, 3),
            TextColumn("max", 6, 16, 3),
        ],
        rows,
        title=head,
    )
    return 0


def cmd_estimate(args: argparse.Namespace) -> int:
    found = _table(args).estimate(args.where, args.snapshot, table_level=args.table_level)

    def text() -> None:
        kind = (
            "exact"
            if found.exact
            else f"between {display.count(found.lower)} and {display.count(found.upper)}"
        )
        print(
            f"{display.count(round(found.row_count))} rows ({kind}), selectivity "
            f"{display.number(found.selectivity)}, {len(found.partitions)} partitions can match"
        )

    return _answer(args, found, text)


def cmd_history(args: argparse.Namespace) -> int:
    found = _table(args).history()

    def text() -> None:
        for v in found:
            if v.damaged is not None:
                print(f"v{v.version:<4} damaged: {v.damaged}")
            elif v.derived is not None:
                d = v.derived
                print(
                    f"derived {d['key']} v{v.version} snapshot {v.snapshot_id}  "
                    f"{display.count(d['row_count'])} rows  where {d['predicate']}  "
                    f"{v.created_at}"
                )
            else:
                print(
                    f"v{v.version:<4} snapshot {v.snapshot_id}  "
                    f"{display.count(v.merged_record_count)} rows  computed "
                    f"{v.partitions_computed} reused {v.partitions_reused}  {v.created_at}"
                )

    return _answer(args, found, text)


def cmd_expire(args: argparse.Namespace) -> int:
    found = _table(args).expire(
        args.retain_last, orphan_age_minutes=args.orphan_age_minutes, dry_run=args.dry_run
    )

    def text() -> None:
        verb = "would remove" if found.dry_run else "removed"
        removed = ", ".join(map(str, found.versions_removed)) or "none"
        print(
            f"{verb} versions {removed} and {display.count(found.files_removed)} files; "
            f"kept versions {', '.join(map(str, found.versions_kept))}"
        )

    return _answer(args, found, text)


def cmd_export_paimon(args: argparse.Namespace) -> int:
    print(json.dumps(_table(args).export_paimon(args.version), indent=2))
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    result = api.sql(
        args.statement, catalog=args.catalog, warehouse=args.warehouse, stats_root=args.stats_root
    )
    return _answer(args, result, lambda: print(result.message))


def cmd_spark_register(args: argparse.Namespace) -> int:
    from lakestats.spark import register_command

    result = register_command(
        _table(args),
        args.name,
        metastore=args.metastore,
        snapshot_id=args.snapshot,
        dry_run=args.dry_run,
        num_bins=args.bins,
    )
    if args.json or args.dry_run:
        _print_json(result)
    else:
        print(
            f"registered {result['name']} ({result['row_count']} rows, "
            f"{len(result['columns'])} columns with statistics) in {args.metastore}"
        )
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from lakestats.service.config import demo_tables, load_tables
    from lakestats.service.server import serve

    configs = load_tables(args.tables) if args.tables else demo_tables(args.warehouse)
    serve(configs, host=args.host, port=args.port, workers=args.workers)
    return 0


class _VersionAction(argparse.Action):
    """``--version``: the installed package's version, read only when asked (every other
    command keeps ``importlib.metadata`` out of its start-up)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib.metadata import version

        print(f"lakestats {version('lakestats')}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="lakestats", description="Column statistics for data-lake tables.")
    parser.add_argument(
        "--version", action=_VersionAction, help="print the installed version and exit"
    )
    parser.add_argument(
        "--spark-conf",
        action="append",
        metavar="KEY=VALUE",
        help="a Spark setting for the session lakestats starts (repeatable), e.g. "
        "--spark-conf spark.executor.memory=8g",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help=f"a TOML settings file (default ${config.CONFIG_ENV}); see docs/configuration.md",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("table", help="catalog identifier (db.table) or table path/URI")
        p.add_argument("--stats-root", help="statistics root URI (default <table>/_lakestats)")
        p.add_argument("--catalog", help="pyiceberg catalog name (default: embedded SQLite)")
        p.add_argument("--warehouse", help="embedded catalog's warehouse directory")
        p.add_argument("--json", action="store_true", help="print JSON")
        verbose(p)

    def verbose(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--verbose", action="store_true", help="say where Spark's own log file is"
        )

    p = sub.add_parser("analyze", help="compute statistics for every partition (Spark)")
    common(p)
    add_option_flags(p, AnalyzeOptions)
    p.add_argument(
        "--as-of",
        type=_timestamp_ms,
        help="the snapshot current at this time (ISO-8601, UTC unless an offset is given)",
    )
    _spark_flags(p)
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser("sample", help="a stored sample of the table: create, refresh, show")
    p.add_argument("action", choices=("create", "refresh", "show"))
    common(p)
    add_option_flags(p, SampleOptions)
    _spark_flags(p)
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser("partitions", help="list partitions with statistics")
    common(p)
    p.set_defaults(func=cmd_partitions)

    p = sub.add_parser("show", help="statistics of the table or of one partition")
    common(p)
    p.add_argument("--partition", help="k=v[,k2=v2] (default: table level)")
    p.add_argument("--snapshot", type=int, help="table snapshot (default: current)")
    p.add_argument(
        "--as-of", type=_timestamp_ms, help="the snapshot current at this time (ISO-8601)"
    )
    p.add_argument("--columns", help="only these columns, comma-separated")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser(
        "profile",
        help="the table at a glance: size, freshness, exact figures and alerts (no data read)",
    )
    common(p)
    p.add_argument("--snapshot", type=int, help="table snapshot (default: current)")
    p.add_argument(
        "--as-of", type=_timestamp_ms, help="the snapshot current at this time (ISO-8601)"
    )
    p.set_defaults(func=cmd_profile)

    p = sub.add_parser("frequencies", help="value frequencies of one column")
    common(p)
    p.add_argument("--column", required=True)
    p.add_argument("--partition", help="k=v[,k2=v2]")
    p.add_argument("--top", type=_positive, help="only the k most frequent values")
    p.set_defaults(func=cmd_frequencies)

    p = sub.add_parser("rank", help="exact table-level rank of a value (analyze --exact)")
    common(p)
    p.add_argument("--column", required=True)
    p.add_argument("--value", required=True)
    p.set_defaults(func=cmd_rank)

    p = sub.add_parser("quantile", help="exact table-level quantile (analyze --exact)")
    common(p)
    p.add_argument("--column", required=True)
    p.add_argument("--p", type=float, required=True, help="between 0 and 1")
    p.set_defaults(func=cmd_quantile)

    p = sub.add_parser("histogram", help="histogram bins of one column")
    common(p)
    p.add_argument("--column", required=True)
    p.add_argument("--partition", help="k=v[,k2=v2]")
    p.add_argument("--start", type=_positive, default=0, help="first bin (default 0)")
    p.add_argument("--stop", type=_positive, help="bin after the last one (default: all)")
    p.set_defaults(func=cmd_histogram)

    p = sub.add_parser("partitions-containing", help="partitions that hold a value")
    common(p)
    p.add_argument("--column", required=True)
    p.add_argument("--value", required=True, help="the value, as text")
    p.set_defaults(func=cmd_partitions_containing)

    p = sub.add_parser(
        "stats", help="statistics of some columns for the table and every partition (batched)"
    )
    common(p)
    p.add_argument("--columns", required=True, help="column names, comma-separated")
    p.add_argument(
        "--where",
        help="only partitions that can match (min/max, nulls, frequencies); the derived "
        "statistics when the predicate was analyzed with analyze --where",
    )
    p.add_argument(
        "--by-partition", action="store_true", help="also every matching partition's statistics"
    )
    p.add_argument("--snapshot", type=int, help="table snapshot (default: current)")
    p.add_argument(
        "--as-of", type=_timestamp_ms, help="the snapshot current at this time (ISO-8601)"
    )
    p.set_defaults(func=cmd_stats)
    p = sub.add_parser("estimate", help="rows a predicate keeps, with sound bounds")
    common(p)
    p.add_argument("--where", required=True, help="SQL boolean expression over columns")
    p.add_argument("--snapshot", type=int, help="the table snapshot (default: latest version)")
    p.add_argument(
        "--table-level", action="store_true", help="use the table-level statistics only"
    )
    p.set_defaults(func=cmd_estimate)

    p = sub.add_parser("history", help="statistics versions, oldest first")
    common(p)
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("expire", help="remove versions of expired snapshots and their files")
    common(p)
    p.add_argument(
        "--retain-last",
        type=_positive,
        default=1,
        help="always keep this many newest versions (default 1)",
    )
    p.add_argument(
        "--orphan-age-minutes",
        type=_positive,
        default=60,
        help="leave unreferenced files younger than this (default 60)",
    )
    p.add_argument("--dry-run", action="store_true", help="only say what would go")
    p.set_defaults(func=cmd_expire)

    p = sub.add_parser("export-paimon", help="a version as Paimon's statistics JSON")
    common(p)
    p.add_argument("--version", type=int, help="statistics version (default: latest)")
    p.set_defaults(func=cmd_export_paimon)

    p = sub.add_parser("sql", help="ANALYZE TABLE t COMPUTE STATISTICS [NOSCAN | FOR ...]")
    p.add_argument("statement")
    p.add_argument("--stats-root")
    p.add_argument("--catalog")
    p.add_argument("--warehouse")
    p.add_argument("--json", action="store_true")
    _spark_flags(p)
    verbose(p)
    p.set_defaults(func=cmd_sql)

    p = sub.add_parser(
        "spark-register", help="a Spark table with lakestats' statistics (Hive metastore)"
    )
    common(p)
    p.add_argument("--name", required=True, help="Spark table name (db.table or table)")
    p.add_argument(
        "--metastore",
        default="spark-metastore",
        help="directory of the local Hive (Derby) metastore (default ./spark-metastore)",
    )
    p.add_argument("--snapshot", type=int, help="table snapshot (default: current)")
    p.add_argument("--bins", type=_positive, default=254, help="histogram bins (default 254)")
    p.add_argument(
        "--dry-run", action="store_true", help="print the statistics as JSON, no Spark"
    )
    p.set_defaults(func=cmd_spark_register)

    p = sub.add_parser("serve", help="the statistics service: HTTP API and web pages")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=8080, help="port (default 8080)")
    p.add_argument(
        "--tables", help="TOML or JSON file: name -> table (default: the demo warehouse)"
    )
    p.add_argument("--warehouse", help="the demo's warehouse directory (default ./warehouse)")
    p.add_argument("--workers", type=_positive, default=1, help="uvicorn workers (default 1)")
    p.set_defaults(func=cmd_serve)
    return parser


FREE_TEXT_OPTIONS = ("--value", "--where")
"""Options whose value may begin with ``-`` (``--value -inf``, ``--where '-n > 1'``)."""


def _attach_free_text(argv: Sequence[str]) -> list[str]:
    """``--value -inf`` as ``--value=-inf``: argparse would take ``-inf`` for an option (it
    only recognises negative numbers of digits), and say --value has no argument."""
    out: list[str] = []
    items = list(argv)
    i = 0
    while i < len(items):
        item = items[i]
        if item in FREE_TEXT_OPTIONS and i + 1 < len(items) and items[i + 1].startswith("-"):
            following = items[i + 1]
            if not following.startswith("--"):
                out.append(f"{item}={following}")
                i += 2
                continue
        out.append(item)
        i += 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_attach_free_text(sys.argv[1:] if argv is None else argv))
    debug = False
    earlier_log = _spark_log()
    try:
        settings = settings_of(args)
        debug = settings.debug
        with config.use(settings):
            code = args.func(args)
            sys.stdout.flush()  # a closed pipe shows here, inside the handler
        return code
    except BrokenPipeError:
        # the reader went away (`| head`): stop quietly; Python's exit flush must not fail
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a Unix tool killed by the signal
    except LakestatsError as exc:
        if debug:
            raise
        _fail(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        print("lakestats: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug or an error no layer translated: still one line
        if debug:
            raise
        _fail(
            f"unexpected {type(exc).__name__}: {_first_line(exc)} "
            "(LAKESTATS_DEBUG=1 shows the traceback)"
        )
        return 1
    finally:
        log = _spark_log()
        if log is not None and log != earlier_log and (debug or getattr(args, "verbose", False)):
            print(f"lakestats: spark log: {log}", file=sys.stderr)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "no message"


def _spark_log() -> str | None:
    """The log file of the Spark session lakestats started, if it started one (``--verbose``
    and ``LAKESTATS_DEBUG`` name it when this command started it)."""
    session = sys.modules.get("lakestats.compute.session")
    return session.spark_log_path() if session is not None else None


if __name__ == "__main__":
    sys.exit(main())
