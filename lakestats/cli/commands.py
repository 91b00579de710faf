"""The ``lakestats`` commands: each checks its flags, calls the table handle
(``lakestats.api``) and hands the answer to the command's ``Output``
(``lakestats.cli.output``); ``COMMANDS`` maps a command's name to it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence

from lakestats import api
from lakestats.cli.option_flags import columns_of, options_from_args
from lakestats.cli.output import Output
from lakestats.errors import InvalidArgumentError
from lakestats.options import AnalyzeOptions, SampleOptions


def _table(args: argparse.Namespace) -> api.LakestatsTable:
    table = api.open_table(
        args.table, stats_root=args.stats_root, catalog=args.catalog, warehouse=args.warehouse
    )
    if getattr(args, "as_of", None) is not None:
        if args.snapshot is not None:
            raise InvalidArgumentError("pass --snapshot or --as-of, not both")
        args.snapshot = api.snapshot_as_of(table.format, args.as_of)
    return table


def analyze(args: argparse.Namespace, out: Output) -> None:
    table = _table(args)  # --as-of becomes --snapshot here
    options = options_from_args(
        args, AnalyzeOptions, progress=not args.json and sys.stderr.isatty()
    )
    out.analyzed(table.analyze(options))


def sample(args: argparse.Namespace, out: Output) -> None:
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
        out.sample(table.sample.manifest())
    elif args.action == "create":
        out.sampled(table.sample.create(options_from_args(args, SampleOptions)))
    else:
        out.sampled(table.sample.refresh())


def partitions(args: argparse.Namespace, out: Output) -> None:
    out.partitions(_table(args).partitions())


def show(args: argparse.Namespace, out: Output) -> None:
    table = _table(args)
    columns = columns_of(args.columns)
    if not args.partition and args.snapshot is None and _counts_only(table):
        out.counts_only(table.summary())
    elif not args.partition and (args.snapshot is not None or table.has_table_statistics()):
        level = table.table_statistics(args.snapshot, columns)
        out.table_statistics(level, _histograms(table, None, args.snapshot))
    else:
        found = table.partition_statistics(args.partition, columns)
        out.partition_statistics(found, _histograms(table, found.name or None, None))


def _counts_only(table: api.LakestatsTable) -> bool:
    """A latest version that ``ANALYZE … NOSCAN`` wrote into a root without column
    statistics: ``show`` says what it recorded (rows, data size) and how to get the rest."""
    summary = table.summary()
    return summary.kind == api.VersionKind.NOSCAN and not (
        summary.partitions or summary.table_level
    )


def _histograms(
    table: api.LakestatsTable, partition: str | None, snapshot: int | None
) -> Callable[[Sequence[Mapping[str, object]]], dict[str, list[int]] | None]:
    """Bin counts for the text view of ``show``, asked for its rows (the latest version's;
    none for an older snapshot's table statistics, whose version the lookups do not
    address)."""

    def counts(rows: Sequence[Mapping[str, object]]) -> dict[str, list[int]] | None:
        if snapshot is not None:
            return None
        return {
            str(r["name"]): table.histogram(str(r["name"]), partition).counts
            for r in rows
            if r.get("histogram_bins")
        }

    return counts


def profile(args: argparse.Namespace, out: Output) -> None:
    table = _table(args)
    out.profile(table.profile(args.snapshot), lambda: [p.row_count for p in table.partitions()])


def frequencies(args: argparse.Namespace, out: Output) -> None:
    out.frequencies(_table(args).frequencies(args.column, args.partition, args.top))


def rank(args: argparse.Namespace, out: Output) -> None:
    out.rank(_table(args).rank(args.column, args.value))


def quantile(args: argparse.Namespace, out: Output) -> None:
    out.quantile(_table(args).quantile(args.column, args.p))


def histogram(args: argparse.Namespace, out: Output) -> None:
    out.histogram(_table(args).histogram(args.column, args.partition, args.start, args.stop))


def partitions_containing(args: argparse.Namespace, out: Output) -> None:
    out.holders(_table(args).partitions_containing(args.column, args.value))


def stats(args: argparse.Namespace, out: Output) -> None:
    columns = columns_of(args.columns)
    assert columns is not None  # required by the parser
    out.stats(
        _table(args).stats(
            columns, where=args.where, by_partition=args.by_partition, snapshot_id=args.snapshot
        )
    )


def estimate(args: argparse.Namespace, out: Output) -> None:
    if args.group_by is not None:
        names = columns_of(args.group_by, "--group-by") or []
        out.group_distinct(_table(args).group_distinct(names, args.snapshot))
        return
    out.estimate(_table(args).estimate(args.where, args.snapshot, table_level=args.table_level))


def history(args: argparse.Namespace, out: Output) -> None:
    out.history(_table(args).history())


def expire(args: argparse.Namespace, out: Output) -> None:
    out.expired(
        _table(args).expire(
            args.retain_last, orphan_age_minutes=args.orphan_age_minutes, dry_run=args.dry_run
        )
    )


def export_paimon(args: argparse.Namespace, out: Output) -> None:
    out.paimon(_table(args).export_paimon(args.version))


def sql(args: argparse.Namespace, out: Output) -> None:
    out.sql(
        api.sql(
            args.statement,
            catalog=args.catalog,
            warehouse=args.warehouse,
            stats_root=args.stats_root,
        )
    )


def spark_register(args: argparse.Namespace, out: Output) -> None:
    from lakestats.spark import register_command  # Spark's integration: this command only

    out.registered(
        register_command(
            _table(args),
            args.name,
            metastore=args.metastore,
            snapshot_id=args.snapshot,
            dry_run=args.dry_run,
            num_bins=args.bins,
        )
    )


def spark_jar(args: argparse.Namespace, out: Output) -> None:
    out.jar(api.jar_path(args.spark_version))


def serve(args: argparse.Namespace, out: Output) -> None:
    # the service (FastAPI, uvicorn): this command only
    from lakestats.service.config import ServiceConfig, demo_tables, load_service
    from lakestats.service.server import serve as run

    service = load_service(args.tables) if args.tables else ServiceConfig(
        demo_tables(args.warehouse)
    )
    run(service, host=args.host, port=args.port, workers=args.workers)


def token(args: argparse.Namespace, out: Output) -> None:
    """A new token: the secret once, its hashed entry, appended to ``--add-to``."""
    from lakestats.service.config import add_token
    from lakestats.service.tokens import ALL, check_name, digest, entry, new_secret

    name = check_name(args.name)
    tables = None if args.tables.strip() == ALL else columns_of(args.tables)
    if tables is not None and ALL in tables:
        raise InvalidArgumentError('--tables: give "*" alone, or table names')
    secret = new_secret()
    if args.add_to:
        add_token(args.add_to, name, secret, tables)
    out.token({
        "name": name,
        "token": secret,
        "hash": digest(secret),
        "tables": tables if tables is not None else ALL,
        "entry": entry(name, secret, tables),
        "added_to": args.add_to,
    })


COMMANDS: dict[str, Callable[[argparse.Namespace, Output], None]] = {
    "analyze": analyze,
    "sample": sample,
    "partitions": partitions,
    "show": show,
    "profile": profile,
    "frequencies": frequencies,
    "rank": rank,
    "quantile": quantile,
    "histogram": histogram,
    "partitions-containing": partitions_containing,
    "stats": stats,
    "estimate": estimate,
    "history": history,
    "expire": expire,
    "export-paimon": export_paimon,
    "sql": sql,
    "spark-register": spark_register,
    "spark-jar": spark_jar,
    "serve": serve,
    "token": token,
}
