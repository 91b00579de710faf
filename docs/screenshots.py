"""Refresh the preview screenshots in ``docs/screenshots/`` (``make screenshots``).

Three tables a data engineer meets: a wide one (300 columns of mixed kinds), a skewed one
(Zipf values, a dominant value, a high-null column, a constant) and a daily time series
partitioned by day whose last days drift. Each is written under ``build/screenshots/``,
analyzed on local Spark, served by ``lakestats serve``'s app, and its table page and one
column page are captured in Debian's Chromium through Playwright. Build tooling, not part
of the package, as ``gen_reference.py`` is.
"""

from __future__ import annotations

import datetime as dt
import shutil
import socket
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "screenshots"
WORK = REPO / "build" / "screenshots"
CHROMIUM = "/usr/bin/chromium"


def wide(root: Path, columns: int = 300, parts: int = 4, rows: int = 2_000) -> None:
    for p in range(parts):
        rng = np.random.default_rng(p)
        data = {}
        for c in range(columns):
            kind = c % 5
            if kind == 0:
                data[f"m{c:03d}"] = rng.normal(c, 1 + p, rows)
            elif kind == 1:
                data[f"n{c:03d}"] = rng.integers(0, 100 + c, rows)
            elif kind == 2:
                data[f"s{c:03d}"] = pa.array([f"v{v}" for v in rng.integers(0, 20, rows)])
            elif kind == 3:
                data[f"b{c:03d}"] = rng.random(rows) < 0.3
            else:
                data[f"e{c:03d}"] = rng.exponential(10, rows)
        (root / f"part={p}").mkdir(parents=True)
        pq.write_table(pa.table(data), root / f"part={p}" / "data.parquet")


def skewed(root: Path, parts: int = 3, rows: int = 20_000) -> None:
    for p in range(parts):
        rng = np.random.default_rng(10 + p)
        zipf = rng.zipf(1.6, rows)
        amount = rng.lognormal(3, 1.5, rows)
        note = np.where(rng.random(rows) < 0.75, None, np.char.add("n", zipf.astype(str)))
        table = pa.table({
            "user_id": pa.array(np.arange(p * rows, (p + 1) * rows)),
            "item": pa.array(np.minimum(zipf, 10_000)),
            "status": pa.array(np.where(rng.random(rows) < 0.9, "ok", "retry")),
            "amount": pa.array(amount),
            "country": pa.array(["NL"] * rows),
            "note": pa.array(note.tolist(), pa.string()),
        })
        (root / f"shard={p}").mkdir(parents=True)
        pq.write_table(table, root / f"shard={p}" / "data.parquet")


def time_series(root: Path, days: int = 30, rows: int = 3_000) -> None:
    start = dt.date(2026, 10, 1)
    for d in range(days):
        rng = np.random.default_rng(100 + d)
        late = d >= days - 3  # the last days drift: a new sensor, and gaps in another
        n = rows + int(rows * 0.5 * np.sin(d / 4))
        temperature = rng.normal(25 if late else 18, 2, n)
        humidity = rng.uniform(30, 70, n)
        if late:
            humidity[rng.random(n) < 0.5] = np.nan
        table = pa.table({
            "sensor": pa.array(rng.integers(0, 50, n)),
            "temperature": pa.array(temperature),
            "humidity": pa.array(humidity, from_pandas=True),
            "reading_at": pa.array(
                [dt.datetime(2026, 10, 1) + dt.timedelta(days=d, seconds=int(s))
                 for s in rng.integers(0, 86_400, n)]
            ),
        })
        day = (start + dt.timedelta(days=d)).isoformat()
        (root / f"day={day}").mkdir(parents=True)
        pq.write_table(table, root / f"day={day}" / "data.parquet")


TABLES = {
    "wide": (wide, "e004"),
    "skewed": (skewed, "item"),
    "timeseries": (time_series, "humidity"),
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    import uvicorn
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(REPO))
    import lakestats.api as ls
    from lakestats.compute.session import get_spark
    from lakestats.service.app import create_app
    from lakestats.service.config import TableConfig
    from tests.service.uvicorn_thread import serving

    shutil.rmtree(WORK, ignore_errors=True)
    spark = get_spark("local[2]")
    configs = []
    for name, (make, _) in TABLES.items():
        make(WORK / name)
        ls.open_table(str(WORK / name)).analyze(spark=spark)
        configs.append(TableConfig(name=name, table=str(WORK / name)))
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(configs), host="127.0.0.1", port=port, log_level="warning")
    )
    OUT.mkdir(parents=True, exist_ok=True)
    with serving(server), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        for name, (_, column) in TABLES.items():
            page.goto(f"http://127.0.0.1:{port}/tables/{name}")
            page.wait_for_selector('#overview[data-loaded="true"]')
            page.wait_for_selector('#columns-body[data-loaded="true"]')
            page.screenshot(path=str(OUT / f"{name}.png"), full_page=False)
            page.goto(f"http://127.0.0.1:{port}/tables/{name}/columns/{column}?scale=log")
            page.screenshot(path=str(OUT / f"{name}-{column}.png"), full_page=True)
            print(f"docs/screenshots/{name}.png, {name}-{column}.png")
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
