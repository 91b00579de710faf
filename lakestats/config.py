"""Settings: where lakestats runs (Spark, catalog, S3, logging), read in one place.

Sources, each overriding the one before: the defaults here, the environment (every
variable is a field's ``env`` metadata; README "Configuration" lists them all), an
optional TOML file (``LAKESTATS_CONFIG`` or ``--config``; keys are the fields' ``file``
metadata, e.g. ``[spark] master = ...``), then arguments (the command line's global and
Spark flags). No other module reads ``os.environ`` for a setting: they call
``settings()``.

``lakestats.cli`` builds the settings once per command and installs them (``use``); a
library caller that installs nothing gets them built from the environment (and file) when
it asks, so a process that changes its environment between calls sees the change.
Executors never read these: what they need (S3 options) travels inside the job.

Over 400 lines because every setting is declared here, each with its sources and
help (the reference is generated from them), beside the one reader of all sources.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from lakestats.errors import InvalidArgumentError

CONFIG_ENV = "LAKESTATS_CONFIG"
Groups = tuple[tuple[str, ...], ...]


def installed_version() -> str:
    """This lakestats' installed version (what workers must match, what files say made them)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lakestats")
    except PackageNotFoundError:
        return "unknown"


def setting(
    default: Any,  # noqa: ANN401 - any field's default
    *,
    env: tuple[str, ...] = (),
    file: str | None = None,
    help: str,
) -> Any:  # noqa: ANN401 - a dataclass field
    """A field with where it is read from: ``env`` (the first variable set wins), the
    config file's dotted ``file`` key, and the README's ``help``."""
    return field(default=default, metadata={"env": env, "file": file, "help": help})


@dataclass(frozen=True)
class Settings:
    spark_master: str | None = setting(
        None,
        env=("LAKESTATS_SPARK_MASTER",),
        file="spark.master",
        help="Spark master for sessions lakestats starts (`--master`; default `local[*]`)",
    )
    spark_remote: str | None = setting(
        None,
        env=("LAKESTATS_SPARK_REMOTE",),
        file="spark.remote",
        help="Spark Connect server `sc://host:port` (`--remote`); wins over the master",
    )
    driver_memory: str = setting(
        "4g",
        env=("LAKESTATS_DRIVER_MEMORY",),
        file="spark.driver_memory",
        help="`spark.driver.memory` of a session lakestats starts",
    )
    spark_conf: tuple[tuple[str, str], ...] = setting(
        (),
        file="spark.conf",
        help="extra Spark settings (`--spark-conf k=v`, repeatable; file: `[spark.conf]` "
        "table), applied after lakestats' own",
    )
    ship_lakestats: bool = setting(
        False,
        env=("LAKESTATS_SHIP_LAKESTATS",),
        file="spark.ship_lakestats",
        help="`--ship-lakestats`: send this lakestats package with a Spark Connect session "
        "(addArtifacts), for servers whose workers lack it",
    )
    spark_log: str | None = setting(
        None,
        env=("LAKESTATS_SPARK_LOG",),
        file="spark.log",
        help="file for Spark's and the JVM's logs (default `$TMPDIR/lakestats-logs/...`)",
    )
    warehouse: str = setting(
        "warehouse",
        env=("LAKESTATS_WAREHOUSE",),
        file="catalog.warehouse",
        help="directory of the embedded SQLite Iceberg catalog (`--warehouse`)",
    )
    catalog: str | None = setting(
        None,
        env=("LAKESTATS_CATALOG",),
        file="catalog.name",
        help="pyiceberg catalog for `db.table` names (`--catalog`; default: the embedded one)",
    )
    s3_endpoint_url: str | None = setting(
        None,
        env=("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
        file="s3.endpoint_url",
        help="S3-compatible endpoint for `s3://` paths",
    )
    s3_region: str | None = setting(
        None, env=("AWS_REGION", "AWS_DEFAULT_REGION"), file="s3.region", help="S3 region"
    )
    s3_access_key: str | None = setting(
        None, env=("AWS_ACCESS_KEY_ID",), file="s3.access_key_id", help="S3 access key id"
    )
    s3_secret_key: str | None = setting(
        None,
        env=("AWS_SECRET_ACCESS_KEY",),
        file="s3.secret_access_key",
        help="S3 secret access key",
    )
    s3_connect_timeout: float = setting(
        3.0,
        env=("LAKESTATS_S3_CONNECT_TIMEOUT",),
        file="s3.connect_timeout",
        help="seconds to open a connection to the S3 endpoint",
    )
    s3_request_timeout: float = setting(
        4.0,
        env=("LAKESTATS_S3_REQUEST_TIMEOUT",),
        file="s3.request_timeout",
        help="seconds an S3 request of a lookup may take (times `s3.attempts`: ~15 s)",
    )
    s3_analyze_request_timeout: float = setting(
        15.0,
        env=("LAKESTATS_S3_ANALYZE_REQUEST_TIMEOUT",),
        file="s3.analyze_request_timeout",
        help="seconds an S3 request of `analyze` may take, on the driver and executors "
        "(bigger reads and writes; times `s3.attempts`: under a minute)",
    )
    s3_attempts: int = setting(
        3,
        env=("LAKESTATS_S3_ATTEMPTS",),
        file="s3.attempts",
        help="tries of an S3 request before it fails (the first one included)",
    )
    debug: bool = setting(
        False,
        env=("LAKESTATS_DEBUG",),
        file="debug",
        help="tracebacks instead of one-line errors; name Spark's log file",
    )
    timings: bool = setting(
        False,
        env=("LAKESTATS_TIMINGS",),
        file="timings",
        help="each analyze stage's seconds on stderr (benchmarks)",
    )
    exact_threshold: int | None = setting(
        None,
        env=("LAKESTATS_EXACT_THRESHOLD",),
        file="exact.threshold",
        help="`--exact`: most summed partition distinct counts for scenario #2 (2^32-1)",
    )
    exact_batch_values: int | None = setting(
        None,
        env=("LAKESTATS_EXACT_BATCH_VALUES",),
        file="exact.batch_values",
        help="`--exact`: distinct values per batch of scenario #3 (2^32-1)",
    )
    exact_near_unique: float | None = setting(
        None,
        env=("LAKESTATS_EXACT_NEAR_UNIQUE",),
        file="exact.near_unique",
        help="`--exact`: unused: only repeated values are listed (kept: files stay valid)",
    )
    exact_max_candidates: int | None = setting(
        None,
        env=("LAKESTATS_EXACT_MAX_CANDIDATES",),
        file="exact.max_candidates",
        help="`--exact`: unused since the range merge counts every value (kept: files stay valid)",
    )
    exact_range_rows: int | None = setting(
        None,
        env=("LAKESTATS_EXACT_RANGE_ROWS",),
        file="exact.range_rows",
        help="`--exact`: staged value rows merged by one range task (2,000,000)",
    )
    serve_tables: str | None = setting(
        None,
        env=("LAKESTATS_SERVE_TABLES",),
        help="set by `lakestats serve` for its uvicorn workers: the served tables",
    )
    serve_request_seconds: float = setting(
        10.0,
        env=("LAKESTATS_SERVE_REQUEST_SECONDS",),
        file="serve.request_seconds",
        help="`serve`: a request not answered within this many seconds gets a JSON 503 "
        "(0: no budget)",
    )
    serve_header_seconds: float = setting(
        10.0,
        env=("LAKESTATS_SERVE_HEADER_SECONDS",),
        file="serve.header_seconds",
        help="`serve`: a connection whose request line and headers take longer is closed "
        "with a JSON 408",
    )
    max_in_values: int = setting(
        1_000_000,
        env=("LAKESTATS_MAX_IN_VALUES",),
        file="query.max_in_values",
        help="values a predicate's IN lists may hold in all (`estimate`, `stats --where`, "
        "the service's estimates)",
    )
    column_groups: tuple[tuple[str, Groups], ...] = setting(
        (),
        file="column_groups",
        help="`analyze`'s column groups of each table when `--column-groups` is not given "
        "(file only: a `[column_groups]` table, the table's name as `analyze` is given it = "
        "a list of groups, each `\"a,b\"` or a list of names)",
    )
    config_file: str | None = setting(
        None,
        env=(CONFIG_ENV,),
        help="a TOML file of these settings (`--config FILE`), read after the environment",
    )

    @property
    def spark_conf_dict(self) -> dict[str, str]:
        return dict(self.spark_conf)

    def column_groups_of(self, *names: str) -> Groups:
        """The column groups the settings declare for a table known by any of ``names``
        (its name as given, its identifier; paths compared normalized)."""
        wanted = {_table_key(n) for n in names if n}
        return next((groups for table, groups in self.column_groups
                     if _table_key(table) in wanted), ())

    def env_variables(self) -> list[str]:
        """Every environment variable a setting is read from (README's table)."""
        return [name for f in dataclasses.fields(self) for name in f.metadata["env"]]


def load(
    environ: Mapping[str, str] | None = None, arguments: Mapping[str, object] | None = None
) -> Settings:
    """Defaults, then ``environ`` (default ``os.environ``), then the config file it (or
    ``arguments["config_file"]``) names, then ``arguments`` (field name -> value; None
    means not given)."""
    environ = os.environ if environ is None else environ
    given = {k: v for k, v in (arguments or {}).items() if v is not None and v != ()}
    unknown = sorted(set(given) - _FIELDS.keys())
    if unknown:
        raise InvalidArgumentError(f"unknown setting {unknown[0]!r}")
    values: dict[str, object] = {}
    _layer(values, _from_environment(environ))
    path = given.get("config_file") or values.get("config_file")
    if path:
        _layer(values, _from_file(str(path)))
    _layer(values, given)
    return Settings(**values)  # type: ignore[arg-type]


def _layer(values: dict[str, object], layer: Mapping[str, object]) -> None:
    """``layer`` over ``values``: Spark settings merge key by key; a master given without
    a remote drops a remote from an earlier source (the nearer source chose a master)."""
    if "spark_master" in layer and "spark_remote" not in layer:
        values.pop("spark_remote", None)
    for name, value in layer.items():
        if name == "spark_conf":
            merged = dict(values.get("spark_conf", ()))  # type: ignore[arg-type]
            merged.update(dict(value))  # type: ignore[arg-type]
            value = tuple(merged.items())
        values[name] = value


def _from_environment(environ: Mapping[str, str]) -> dict[str, object]:
    found: dict[str, object] = {}
    for f in dataclasses.fields(Settings):
        for variable in f.metadata["env"]:
            text = environ.get(variable)
            if text:
                found[f.name] = _parse(f, text, variable)
                break
    return found


_FALSE = ("0", "false", "no", "off")


def _parse(f: dataclasses.Field, value: object, where: str) -> object:
    """A setting's value from its text (environment) or TOML value, checked by type."""
    kind = str(f.type)
    if kind == "bool":
        if isinstance(value, bool):
            return value
        return str(value).strip().lower() not in _FALSE
    if kind.startswith("int"):
        try:
            if isinstance(value, bool):
                raise ValueError
            return int(value)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"{where} must be a whole number, got {value!r}") from None
    if kind.startswith("float"):
        try:
            return float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"{where} must be a number, got {value!r}") from None
    if f.name == "column_groups":
        return _column_groups(value, where)
    if f.name == "spark_conf":
        if not isinstance(value, Mapping):
            raise InvalidArgumentError(f"{where} must be a table of Spark settings")
        return tuple((str(k), _conf_text(v)) for k, v in value.items())
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{where} must be text, got {value!r}")
    return value


def _table_key(name: str) -> str:
    """A table's name as settings compare it: a path without its trailing slashes."""
    return name.rstrip("/") or name


def _column_groups(value: object, where: str) -> tuple[tuple[str, Groups], ...]:
    """``[column_groups]``: table name -> groups, each ``"a,b"`` or ``["a", "b"]`` (the
    groups themselves are checked where ``analyze`` builds its options)."""
    example = 'such as sales = ["region,tier", "a,b,c"]'
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{where} must be a table of table names, {example}")
    out = []
    for table, groups in value.items():
        if isinstance(groups, str) or not isinstance(groups, list):
            raise InvalidArgumentError(f"{where}: {table} must be a list of groups, {example}")
        found = []
        for group in groups:
            names = group.split(",") if isinstance(group, str) else group
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise InvalidArgumentError(
                    f"{where}: {table} has {group!r}; a group is \"a,b\" or a list of names"
                )
            found.append(tuple(n.strip() for n in names))
        out.append((str(table), tuple(found)))
    return tuple(out)


def _conf_text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
_FILE_KEYS = {f.metadata["file"]: f for f in dataclasses.fields(Settings) if f.metadata["file"]}
_file_cache: dict[tuple[str, int], dict[str, object]] = {}


def _from_file(path: str) -> dict[str, object]:
    """The settings a TOML file holds (read once per file version)."""
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError as exc:
        raise InvalidArgumentError(
            f"config file {path} cannot be read ({exc.strerror}): fix {CONFIG_ENV} or --config"
        ) from None
    if (path, stamp) not in _file_cache:
        import tomllib

        try:
            with open(path, "rb") as handle:
                data = tomllib.load(handle)
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise InvalidArgumentError(f"config file {path} is not valid TOML: {exc}") from None
        found: dict[str, object] = {}
        for key, value in _flatten(data):
            f = _FILE_KEYS.get(key)
            if f is None:
                known = ", ".join(sorted(_FILE_KEYS))
                raise InvalidArgumentError(
                    f"unknown setting {key!r} in config file {path}; known: {known}"
                )
            found[f.name] = _parse(f, value, f"{key} in {path}")
        _file_cache[(path, stamp)] = found
    return _file_cache[(path, stamp)]


def _flatten(data: Mapping[str, object], prefix: str = "") -> Iterator[tuple[str, object]]:
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and dotted not in _FILE_KEYS:
            yield from _flatten(value, dotted + ".")
        else:
            yield dotted, value


def parse_spark_conf(items: list[str] | None) -> tuple[tuple[str, str], ...]:
    """``--spark-conf k=v`` flags as pairs; one line for an entry without ``=``."""
    pairs = []
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidArgumentError(
                f"--spark-conf expects KEY=VALUE such as spark.executor.memory=8g, got {item!r}"
            )
        pairs.append((key.strip(), value))
    return tuple(pairs)


_installed: Settings | None = None


def settings() -> Settings:
    """The installed settings (a CLI command's), else the environment's and file's now."""
    return _installed if _installed is not None else load()


@contextlib.contextmanager
def use(chosen: Settings) -> Iterator[Settings]:
    """Install ``chosen`` for the block (the CLI: one command), then restore."""
    global _installed
    previous, _installed = _installed, chosen
    try:
        yield chosen
    finally:
        _installed = previous
