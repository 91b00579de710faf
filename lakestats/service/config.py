"""Which tables the service serves: a small TOML or JSON file, or the demo warehouse.

The file maps a public name to a table (catalog identifier or URI) and its options::

    [tables.lineitem]
    table = "demo.lineitem"             # or "s3://bucket/warehouse/lineitem", "/data/t"
    stats_root = "s3://bucket/stats/lineitem"   # optional
    catalog = "prod"                    # optional pyiceberg catalog name
    warehouse = "/srv/warehouse"        # optional embedded catalog warehouse
    s3 = { endpoint_url = "http://127.0.0.1:9000", region = "us-east-1" }  # optional
    sensitive = ["l_comment"]           # optional: columns served without their values

    [tokens.planner]                    # optional: then every request needs a token
    hash = "sha256:…"                   # printed by `lakestats token`
    tables = ["lineitem"]               # or "*"

(JSON: ``{"tables": {"lineitem": {"table": ...}}, "tokens": {...}}``). Requests address
tables only by these names; names are restricted to ``[A-Za-z0-9_.-]`` (no ``..``), so a
request can never name a path on the server's disk. Relative paths in the file are
relative to it. ``tokens`` (``lakestats.service.tokens``) and ``sensitive``
(``lakestats.service.sensitive``) are the service's access control (docs/access-control.md).
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from lakestats.api import S3Options
from lakestats.errors import InvalidArgumentError
from lakestats.service.tokens import Token, entry, parse_tokens

NAME = re.compile(r"^(?!.*\.\.)[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
OPTIONS = {"table", "stats_root", "catalog", "warehouse", "s3", "sensitive"}
S3_OPTIONS = {"endpoint_url", "region", "access_key", "secret_key"}


@dataclass(frozen=True)
class TableConfig:
    """One served table: its public name and how to open it."""

    name: str
    table: str
    stats_root: str | None = None
    catalog: str | None = None
    warehouse: str | None = None
    s3: S3Options | None = None
    sensitive: tuple[str, ...] = ()
    """Columns served without their values (a struct's name covers its fields)."""


@dataclass(frozen=True)
class ServiceConfig:
    """What a tables file configures: the served tables and the tokens that may read them
    (none: the service asks for no token)."""

    tables: list[TableConfig]
    tokens: list[Token] = field(default_factory=list)


def demo_tables(warehouse: str | None = None) -> list[TableConfig]:
    """The embedded demo warehouse (``make demo``): ``demo.lineitem`` as ``lineitem``."""
    from lakestats.api import default_warehouse
    from lakestats.demo import IDENTIFIER

    return [
        TableConfig(
            name=IDENTIFIER.split(".")[-1],
            table=IDENTIFIER,
            warehouse=warehouse or default_warehouse(),
        )
    ]


def load_tables(path: str | Path) -> list[TableConfig]:
    """Parse a TOML (``.toml``) or JSON config file into table configs."""
    return load_service(path).tables


def load_service(path: str | Path) -> ServiceConfig:
    """Parse a TOML (``.toml``) or JSON config file into table configs and tokens."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidArgumentError(f"cannot read the tables config {path}: {exc}") from exc
    except UnicodeDecodeError:
        raise InvalidArgumentError(
            f"the tables config {path} is not text: give a TOML or JSON file"
        ) from None
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        kind = path.suffix[1:] or "TOML"
        raise InvalidArgumentError(f"{path} is not valid {kind}: {exc}") from None
    tables = data.get("tables") if isinstance(data, dict) else None
    if not isinstance(tables, dict) or not tables:
        raise InvalidArgumentError(
            f"{path} names no tables: expected a [tables.NAME] section with table = URI"
        )
    unknown = set(data) - {"tables", "tokens"}
    if unknown:
        raise InvalidArgumentError(
            f"{path}: unknown section(s) {sorted(unknown)}; allowed: tables, tokens"
        )
    configs = [_table_config(name, spec, path.parent) for name, spec in tables.items()]
    return ServiceConfig(configs, parse_tokens(data.get("tokens"), tables, str(path)))


def _table_config(name: str, spec: object, base: Path) -> TableConfig:
    if not NAME.match(name):
        raise InvalidArgumentError(
            f"table name {name!r} in the config: use letters, digits, '_', '.', '-' only"
        )
    if not isinstance(spec, dict) or not isinstance(spec.get("table"), str):
        raise InvalidArgumentError(f"table {name!r} in the config needs table = URI or db.table")
    unknown = set(spec) - OPTIONS
    if unknown:
        raise InvalidArgumentError(
            f"table {name!r}: unknown option(s) {sorted(unknown)}; allowed: {sorted(OPTIONS)}"
        )
    s3 = spec.get("s3")
    if s3 is not None:
        if not isinstance(s3, dict) or set(s3) - S3_OPTIONS:
            raise InvalidArgumentError(
                f"table {name!r}: s3 takes only {sorted(S3_OPTIONS)}"
            )
        s3 = S3Options(**s3)
    sensitive = spec.get("sensitive", [])
    if not isinstance(sensitive, list) or not all(
        isinstance(c, str) and c for c in sensitive
    ):
        raise InvalidArgumentError(
            f'table {name!r}: sensitive must be a list of column names, e.g. ["email"]'
        )
    return TableConfig(
        name=name,
        table=_table_ref(spec["table"], base),
        stats_root=_path(spec["stats_root"], base) if spec.get("stats_root") else None,
        catalog=spec.get("catalog"),
        warehouse=_path(spec["warehouse"], base) if spec.get("warehouse") else None,
        s3=s3,
        sensitive=tuple(dict.fromkeys(sensitive)),
    )


def _table_ref(value: str, base: Path) -> str:
    """A catalog identifier (``db.table``) or URI stays as written; a relative path in the
    file is relative to the file."""
    if "://" in value or ("/" not in value and not value.startswith(".")):
        return value
    return _path(value, base)


def _path(value: str, base: Path) -> str:
    return value if "://" in value else str((base / value).resolve())


def add_token(path: str | Path, name: str, secret: str, tables: list[str] | None) -> None:
    """Append ``secret``'s entry (its hash, never the secret) to the TOML tables file
    ``path``, after checking that the file with it still loads (a served table for each
    grant, a new name); the file is replaced whole, never left half written."""
    path = Path(path)
    if path.suffix == ".json":
        raise InvalidArgumentError(
            f"{path} is JSON: add the token to its \"tokens\" object by hand (--add-to "
            "writes TOML files)"
        )
    before = load_service(path)
    if any(t.name == name for t in before.tokens):
        raise InvalidArgumentError(f"{path} already has a token named {name!r}")
    served = [c.name for c in before.tables]
    unknown = sorted(set(tables or ()) - set(served))
    if unknown:
        raise InvalidArgumentError(f"{path} does not serve {unknown}; served: {served}")
    text = path.read_text(encoding="utf-8")
    ending = "" if text.endswith("\n") or not text else "\n"
    text = f"{text}{ending}\n{entry(name, secret, tables)}"
    temporary = path.with_name(f".{path.name}.new")
    temporary.write_text(text, encoding="utf-8")
    try:
        os.chmod(temporary, path.stat().st_mode & 0o7777)
        load_service(temporary)  # the file as it will be: refused whole if it does not load
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
