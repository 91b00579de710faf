"""Readable previews of statistics in the terminal (rich tables)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table


def _fmt(value: object, width: int = 24) -> str:
    if value is None:
        return ""
    text = f"{value:.6g}" if isinstance(value, float) else str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def render_statistics(
    rows: list[dict[str, object]],
    title: str = "",
    top: dict[str, list[tuple[object, int]]] | None = None,
    histograms: dict[str, list[int]] | None = None,
    console: Console | None = None,
) -> None:
    """One line per column: type, nulls, distinct, min, max, mean, top values, histogram."""
    console = console or Console()
    view = Table(title=title, show_lines=False)
    widths = {
        "column": (8, 16),
        "type": (6, 14),
        "nulls": (5, 9),
        "distinct": (8, 9),
        "min": (6, 14),
        "max": (6, 14),
        "mean": (8, 10),
    }
    for header, (least, most) in widths.items():
        view.add_column(
            header,
            no_wrap=True,
            overflow="ellipsis",
            min_width=least,
            max_width=most,
            justify="right" if header in ("nulls", "distinct") else "left",
        )
    if top is not None:
        view.add_column("top values", no_wrap=True, overflow="ellipsis", max_width=34)
    if histograms is not None:
        view.add_column("histogram", no_wrap=True, min_width=20)
    for row in rows:
        cells = [
            _fmt(row["name"]),
            _fmt(row["type"], 18),
            _fmt(row.get("null_count")),
            _fmt(row.get("distinct_count")),
            _fmt(row.get("min")),
            _fmt(row.get("max")),
            _fmt(row.get("mean")),
        ]
        if top is not None:
            values = top.get(str(row["name"]), [])
            cells.append(
                ", ".join(f"{_fmt(v, 12)} ({f})" for v, f in values)
                or ("all distinct" if row.get("all_distinct") else "")
            )
        if histograms is not None:
            cells.append(sparkline(histograms.get(str(row["name"]), [])))
        view.add_row(*cells)
    console.print(view)


def sparkline(counts: list[int], width: int = 20) -> str:
    """A tiny text histogram: counts regrouped into ``width`` bars."""
    if not counts:
        return ""
    bars = " ▁▂▃▄▅▆▇█"
    step = max(1, -(-len(counts) // width))
    grouped = [sum(counts[i : i + step]) for i in range(0, len(counts), step)]
    peak = max(grouped) or 1
    return "".join(bars[min(8, round(8 * g / peak))] for g in grouped)
