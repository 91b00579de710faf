"""Which tables the service serves: a small TOML or JSON file, or the demo warehouse.

The file maps a public name to a table (catalog identifier or URI) and its options::

    [tables.lineitem]
    table = "demo.lineitem"             # or "s3://bucket/warehouse/lineitem", "/data/t"
    stats_root = "s3://bucket/stats/lineitem"   # optional
    catalog = "prod"                    # optional pyiceberg catalog name
    warehouse = "/srv/warehouse"        # optional embedded catalog warehouse
    s3 = { endpoint_url = "http://127.0.0.1:9000", region = "us-east-1" }  # optional

(JSON: ``{"tables": {"lineitem": {"table": ...}}}``). Requests address tables only by
these names; names are restricted to ``[A-Za-z0-9_.-]`` (no ``..``), so a request can
never name a path on the server's disk. Relative paths in the file are relative to it.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from lakestats.api import S3Options
from lakestats.errors import InvalidArgumentError

NAME = re.compile(r"^(?!.*\.\.)[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
OPTIONS = {"table", "stats_root", "catalog", "warehouse", "s3"}
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
    return [_table_config(name, spec, path.parent) for name, spec in tables.items()]


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
    return TableConfig(
        name=name,
        table=_table_ref(spec["table"], base),
        stats_root=_path(spec["stats_root"], base) if spec.get("stats_root") else None,
        catalog=spec.get("catalog"),
        warehouse=_path(spec["warehouse"], base) if spec.get("warehouse") else None,
        s3=s3,
    )


def _table_ref(value: str, base: Path) -> str:
    """A catalog identifier (``db.table``) or URI stays as written; a relative path in the
    file is relative to the file."""
    if "://" in value or ("/" not in value and not value.startswith(".")):
        return value
    return _path(value, base)


def _path(value: str, base: Path) -> str:
    return value if "://" in value else str((base / value).resolve())
