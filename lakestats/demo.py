"""``make demo``: build a TPC-H lineitem Iceberg table, analyze it on Spark, preview it,
and print the exact commands to run next (with the venv's own ``lakestats``).

The table lives in the embedded SQLite catalog under ``./warehouse`` (scale 0.1,
partitioned by year of ``l_shipdate``); statistics go to the table's ``_lakestats``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from rich.console import Console

import lakestats.api as ls
from lakestats.answers import column_json
from lakestats.preview import render_statistics

IDENTIFIER = "demo.lineitem"
SCALE = 0.1


def tpch_lineitem_file(directory: Path, scale: float) -> Path:
    """``lineitem.parquet`` at ``scale`` from tpchgen-cli, generated once under ``directory``."""
    out = directory / f"tpch-sf{scale:g}"
    target = out / "lineitem.parquet"
    if not target.exists():
        out.mkdir(parents=True, exist_ok=True)
        cli = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
        subprocess.run(
            [cli, "parquet", "-s", f"{scale:g}", "--tables=lineitem", f"--output-dir={out}"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return target


def generate_lineitem(warehouse: Path, scale: float = SCALE) -> pa.Table:
    table = pq.read_table(tpch_lineitem_file(warehouse, scale))
    # fresh Iceberg field ids are assigned by the catalog; drop the file's own
    return table.cast(pa.schema([pa.field(f.name, f.type, f.nullable) for f in table.schema]))


def build_table(console: Console) -> None:
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import YearTransform

    warehouse = Path(ls.default_warehouse())
    catalog = ls.load_catalog(warehouse=str(warehouse))
    if catalog.table_exists(IDENTIFIER):
        if catalog.load_table(IDENTIFIER).current_snapshot() is not None:
            return
        catalog.drop_table(IDENTIFIER)  # left empty by an interrupted demo
    with console.status("generating TPC-H lineitem (scale 0.1) and writing it to Iceberg"):
        data = generate_lineitem(warehouse)
        catalog.create_namespace_if_not_exists("demo")
        table = catalog.create_table(IDENTIFIER, schema=data.schema)
        source_id = table.schema().find_field("l_shipdate").field_id
        with table.update_spec() as update:
            update.add_field("l_shipdate", YearTransform(), "l_shipdate_year")
        spec: PartitionSpec = table.spec()
        assert isinstance(spec.fields[0], PartitionField) and spec.fields[0].source_id == source_id
        table.append(data)


def main() -> None:
    console = Console(width=max(170, Console().width))
    build_table(console)
    table = ls.open_table(IDENTIFIER)
    result = table.analyze(progress=True)
    console.print(
        f"[bold]analyzed[/bold] {IDENTIFIER}: {result.partitions_computed} partitions, "
        f"{result.row_count:,} rows -> statistics version {result.version} at {result.stats_root}"
    )
    partitions = table.partitions()
    for p in partitions:
        console.print(f"  {p.name:28s} {p.row_count:>9,} rows")
    name = max(partitions, key=lambda p: p.row_count).name
    rows = table.statistics(name)
    top, histograms = {}, {}
    for row in rows:
        column = row["column"]
        top[column] = list(table.frequencies(column, name, top=3))
        if row.get("histogram_bins"):
            histograms[column] = table.histogram(column, name).counts
    json_rows = [column_json(r) for r in rows]
    render_statistics(
        json_rows, title=f"{IDENTIFIER} {name}", top=top, histograms=histograms, console=console
    )
    render_table_level(table, len(partitions), console)
    print_next_steps(console, IDENTIFIER, name)


def venv_command(name: str) -> str:
    """``name`` in this interpreter's ``bin/``, as typed from the working directory:
    ``make demo`` does not activate ``.venv``, so plain ``lakestats`` is not on the PATH."""
    path = Path(sys.executable).parent / name
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def next_commands(identifier: str, partition: str) -> list[tuple[str, str]]:
    """The commands to run next, each with what it shows."""
    lakestats, table = venv_command("lakestats"), shlex.quote(identifier)
    return [
        (f"{lakestats} show {table}", "the table level in the terminal"),
        (f"{lakestats} show {table} --partition {shlex.quote(partition)}", "one partition"),
        (f"{lakestats} serve", "then open http://127.0.0.1:8080/tables/lineitem"),
    ]


def print_next_steps(console: Console, identifier: str, partition: str) -> None:
    """What ``make demo`` ends with: the exact commands to run next, plain text to copy."""
    commands = next_commands(identifier, partition)
    width = max(len(command) for command, _ in commands) + 2
    lines = [f"next, from {os.getcwd()} (the demo's catalog is ./warehouse):"]
    lines += [f"  {command:<{width}}# {what}" for command, what in commands]
    lines.append(
        f"  or: source {venv_command('activate')}   (then plain `lakestats ...`; "
        "`lakestats --version` says which)"
    )
    console.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)


def render_table_level(table: ls.LakestatsTable, partitions: int, console: Console) -> None:
    """The table-level statistics, top values and histograms; estimates (HLL distinct
    counts, KLL percentiles, re-binned histograms, bounded frequencies) marked ``≈``."""
    level = table.table_statistics()
    rows = [column_json(r) for r in level.columns]
    top = {r["name"]: list(table.frequencies(r["name"], top=3)) for r in rows}
    histograms = {
        r["name"]: table.histogram(r["name"]).counts for r in rows if r.get("histogram_bins")
    }
    render_statistics(
        rows,
        title=f"{IDENTIFIER}: table level, snapshot {level.staleness.statistics_snapshot_id} "
        f"({level.row_count:,} rows, reduced from {partitions} partitions)",
        top=top,
        histograms=histograms,
        console=console,
    )


if __name__ == "__main__":
    main()
