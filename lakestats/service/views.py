"""What the pages show, computed from facade answers: formatted cells and SVG bars.

Pure functions over JSON rows (``jsonio.column_row``), histogram bins and frequency
pairs, so the templates only lay things out. Long values are shortened for display
(the full value is in the cell's ``title``).
"""

from __future__ import annotations

from dataclasses import dataclass

from lakestats.answers import jsonable

CELL_CHARS = 32
SPARK_BARS = 40


def short(value: object, limit: int = CELL_CHARS) -> str:
    """A JSON value as display text, cut at ``limit`` characters."""
    value = jsonable(value)
    if value is None:
        return ""
    if isinstance(value, float):
        text = f"{value:.6g}"
    elif isinstance(value, int) and not isinstance(value, bool):
        text = f"{value:,}"
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def full(value: object) -> str:
    value = jsonable(value)
    return "" if value is None else str(value)


@dataclass
class Distinct:
    text: str
    estimated: bool
    title: str


def distinct(row: dict[str, object]) -> Distinct:
    """The distinct count, marked ``≈`` with its bounds when it is an estimate."""
    count = row.get("distinct_count")
    if count is None:
        return Distinct("", False, "")
    if row.get("distinct_count_exact") is False:
        lower, upper = row.get("distinct_count_lower"), row.get("distinct_count_upper")
        title = f"estimated: between {short(lower)} and {short(upper)}"
        return Distinct(f"≈{short(count)}", True, title)
    return Distinct(short(count), False, "exact")


def null_share(row: dict[str, object]) -> float:
    rows = row.get("row_count") or 0
    return (row.get("null_count") or 0) / rows if rows else 0.0


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    title: str
    start: int
    stop: int


def bars(
    bins: list[dict[str, object]],
    width: float,
    height: float,
    max_bars: int,
    first_bin: int = 0,
) -> list[Bar]:
    """Histogram bins as SVG rectangles, neighbouring bins summed down to ``max_bars``;
    each bar knows its bin range ``[start, stop)`` (for zooming) and its tooltip."""
    if not bins:
        return []
    group = -(-len(bins) // max_bars)
    merged = []
    for i in range(0, len(bins), group):
        chunk = bins[i : i + group]
        merged.append((i, i + len(chunk), chunk[0]["lower"], chunk[-1]["upper"],
                       sum(b["count"] for b in chunk)))
    peak = max(m[4] for m in merged) or 1
    step = width / len(merged)
    out = []
    for n, (i, j, lower, upper, count) in enumerate(merged):
        h = height * count / peak
        out.append(
            Bar(
                x=round(n * step, 2),
                y=round(height - h, 2),
                width=round(max(step - 0.5, 0.5), 2),
                height=round(h, 2),
                title=f"[{full(lower)}, {full(upper)}): {count:,}",
                start=first_bin + i,
                stop=first_bin + j,
            )
        )
    return out


def top_values(pairs: list[dict[str, object]]) -> list[tuple[str, str, str]]:
    """``(short value, full value, count)`` for display."""
    return [(short(p["value"], 20), full(p["value"]), short(p["frequency"])) for p in pairs]
