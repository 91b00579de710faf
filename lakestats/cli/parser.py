"""The ``lakestats`` argument parser: one builder per command, and argparse's errors as the
one ``lakestats: error:`` line.

``analyze``'s and ``sample``'s flags, defaults and help come from ``lakestats.options``
(``option_flags.py``). ``docs/gen_reference.py`` writes the CLI reference from
``build_parser``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lakestats import api, config
from lakestats.cli.option_flags import add_option_flags, positive
from lakestats.errors import InvalidArgumentError
from lakestats.options import AnalyzeOptions, SampleOptions


def fail(message: str) -> None:
    """The one error line every failure prints."""
    first = message.strip().splitlines()[0] if message.strip() else "failed"
    print(f"lakestats: error: {first}", file=sys.stderr)


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as the one ``lakestats: error:`` line (no usage block)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog if self.prog.startswith("lakestats") else "lakestats"
        fail(f"{message} (see `{command} --help`)")
        sys.exit(2)


if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[_Parser]


def _port(text: str) -> int:
    value = positive(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"a TCP port is 0 to 65535, got {text!r}")
    return value


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


class _VersionAction(argparse.Action):
    """``--version``: the installed package's version, read only when asked (every other
    command keeps ``importlib.metadata`` out of its start-up)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:  # noqa: ANN401 - argparse's own keywords
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib.metadata import version  # only for --version

        print(f"lakestats {version('lakestats')}")
        parser.exit()




def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("table", help="catalog identifier (db.table) or table path/URI")
    p.add_argument("--stats-root", help="statistics root URI (default <table>/_lakestats)")
    p.add_argument("--catalog", help="pyiceberg catalog name (default: embedded SQLite)")
    p.add_argument("--warehouse", help="embedded catalog's warehouse directory")
    p.add_argument("--json", action="store_true", help="print JSON")
    _verbose(p)


def _verbose(p: argparse.ArgumentParser) -> None:
    p.add_argument("--verbose", action="store_true", help="say where Spark's own log file is")


def _table_command(sub: Subparsers, name: str, help: str) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(name, help=help)
    _common(p)
    return p


def _snapshot_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--snapshot", type=int, help="table snapshot (default: current)")
    p.add_argument(
        "--as-of", type=_timestamp_ms, help="the snapshot current at this time (ISO-8601)"
    )


def _computing(sub: Subparsers) -> None:
    p = _table_command(sub, "analyze", "compute statistics for every partition (Spark)")
    add_option_flags(p, AnalyzeOptions)
    p.add_argument(
        "--as-of",
        type=_timestamp_ms,
        help="the snapshot current at this time (ISO-8601, UTC unless an offset is given)",
    )
    _spark_flags(p)

    p = sub.add_parser("sample", help="a stored sample of the table: create, refresh, show")
    p.add_argument("action", choices=("create", "refresh", "show"))
    _common(p)
    add_option_flags(p, SampleOptions)
    _spark_flags(p)


def _table_lookups(sub: Subparsers) -> None:
    _table_command(sub, "partitions", "list partitions with statistics")

    p = _table_command(sub, "show", "statistics of the table or of one partition")
    p.add_argument("--partition", help="k=v[,k2=v2] (default: table level)")
    _snapshot_flags(p)
    p.add_argument("--columns", help="only these columns, comma-separated")

    p = _table_command(
        sub,
        "profile",
        "the table at a glance: size, freshness, exact figures and alerts (no data read)",
    )
    _snapshot_flags(p)


def _column_lookups(sub: Subparsers) -> None:
    p = _table_command(sub, "frequencies", "value frequencies of one column")
    p.add_argument("--column", required=True)
    p.add_argument("--partition", help="k=v[,k2=v2]")
    p.add_argument("--top", type=positive, help="only the k most frequent values")

    p = _table_command(sub, "rank", "exact table-level rank of a value (analyze --exact)")
    p.add_argument("--column", required=True)
    p.add_argument("--value", required=True)

    p = _table_command(sub, "quantile", "exact table-level quantile (analyze --exact)")
    p.add_argument("--column", required=True)
    p.add_argument("--p", type=float, required=True, help="between 0 and 1")

    p = _table_command(sub, "histogram", "histogram bins of one column")
    p.add_argument("--column", required=True)
    p.add_argument("--partition", help="k=v[,k2=v2]")
    p.add_argument("--start", type=positive, default=0, help="first bin (default 0)")
    p.add_argument("--stop", type=positive, help="bin after the last one (default: all)")

    p = _table_command(sub, "partitions-containing", "partitions that hold a value")
    p.add_argument("--column", required=True)
    p.add_argument("--value", required=True, help="the value, as text")

    p = _table_command(
        sub, "stats", "statistics of some columns for the table and every partition (batched)"
    )
    p.add_argument("--columns", required=True, help="column names, comma-separated")
    p.add_argument(
        "--where",
        help="only partitions that can match (min/max, nulls, frequencies); the derived "
        "statistics when the predicate was analyzed with analyze --where",
    )
    p.add_argument(
        "--by-partition", action="store_true", help="also every matching partition's statistics"
    )
    _snapshot_flags(p)

    p = _table_command(
        sub, "estimate", "rows a predicate keeps, or distinct combinations, with sound bounds"
    )
    asked = p.add_mutually_exclusive_group(required=True)
    asked.add_argument("--where", help="SQL boolean expression over columns")
    asked.add_argument(
        "--group-by",
        help="columns, comma-separated: their distinct value combinations (from a column "
        "group, analyze --column-groups)",
    )
    p.add_argument("--snapshot", type=int, help="the table snapshot (default: latest version)")
    p.add_argument(
        "--table-level", action="store_true", help="use the table-level statistics only"
    )


def _maintaining(sub: Subparsers) -> None:
    _table_command(sub, "history", "statistics versions, oldest first")

    p = _table_command(sub, "expire", "remove versions of expired snapshots and their files")
    p.add_argument(
        "--retain-last",
        type=positive,
        default=1,
        help="always keep this many newest versions (default 1)",
    )
    p.add_argument(
        "--orphan-age-minutes",
        type=positive,
        default=60,
        help="leave unreferenced files younger than this (default 60)",
    )
    p.add_argument("--dry-run", action="store_true", help="only say what would go")

    p = _table_command(sub, "export-paimon", "a version as Paimon's statistics JSON")
    p.add_argument("--version", type=int, help="statistics version (default: latest)")

    p = sub.add_parser("sql", help="ANALYZE TABLE t COMPUTE STATISTICS [NOSCAN | FOR ...]")
    p.add_argument("statement")
    p.add_argument("--stats-root")
    p.add_argument("--catalog")
    p.add_argument("--warehouse")
    p.add_argument("--json", action="store_true")
    _spark_flags(p)
    _verbose(p)


def _faces(sub: Subparsers) -> None:
    p = _table_command(
        sub, "spark-register", "a Spark table with lakestats' statistics (Hive metastore)"
    )
    p.add_argument("--name", required=True, help="Spark table name (db.table or table)")
    p.add_argument(
        "--metastore",
        default="spark-metastore",
        help="directory of the local Hive (Derby) metastore (default ./spark-metastore)",
    )
    p.add_argument("--snapshot", type=int, help="table snapshot (default: current)")
    p.add_argument("--bins", type=positive, default=254, help="histogram bins (default 254)")
    p.add_argument(
        "--dry-run", action="store_true", help="print the statistics as JSON, no Spark"
    )

    p = sub.add_parser(
        "spark-jar", help="the path of the Spark component's jar, for spark.jars (docs/spark.md)"
    )
    p.add_argument(
        "--spark-version", help="the Spark it is for (default: the installed PySpark's)"
    )
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("serve", help="the statistics service: HTTP API and web pages")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=8080, help="port (default 8080)")
    p.add_argument(
        "--tables", help="TOML or JSON file: name -> table (default: the demo warehouse)"
    )
    p.add_argument("--warehouse", help="the demo's warehouse directory (default ./warehouse)")
    p.add_argument("--workers", type=positive, default=1, help="uvicorn workers (default 1)")

    p = sub.add_parser(
        "token",
        help="a new access token for serve: prints it once, and its hashed entry for the "
        "tables file (docs/access-control.md)",
    )
    p.add_argument("name", help="the token's name in the tables file (letters, digits, _ -)")
    p.add_argument(
        "--tables",
        required=True,
        help='the served tables it may read, comma-separated, or "*" for all of them',
    )
    p.add_argument(
        "--add-to",
        metavar="FILE",
        help="append the hashed entry to this TOML tables file (checked first)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def build_parser() -> argparse.ArgumentParser:
    """The whole parser; ``args.command`` names the command (``commands.COMMANDS``)."""
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
    for add in (_computing, _table_lookups, _column_lookups, _maintaining, _faces):
        add(sub)
    return parser


FREE_TEXT_OPTIONS = ("--value", "--where")
"""Options whose value may begin with ``-`` (``--value -inf``, ``--where '-n > 1'``)."""


def attach_free_text(argv: Sequence[str]) -> list[str]:
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
