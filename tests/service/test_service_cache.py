"""The service's answer cache: repeated requests are answered from it with the same bytes
and ETag; a version published while the server runs is answered (new ETag, new numbers
equal to DuckDB's and to a fresh ``LakestatsTable``'s) and no older one; ``as_of`` answers
are never cached; the cache's own LRU, byte budget and lifetime."""

from __future__ import annotations

import datetime as dt
import decimal
import time
from pathlib import Path
from urllib.parse import urlencode

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

import lakestats.api as ls
from lakestats.answers import column_json as column_row
from lakestats.answers import jsonable
from lakestats.service.app import create_app
from lakestats.service.cache import Answer, AnswerCache
from tests.service.test_service_fixture import analyzed_sales, duck

URLS = [
    "/api/tables/sales/statistics?partition=region=east&columns=n,word",
    "/api/tables/sales/statistics?columns=n,word",
    "/api/tables/sales/columns/word/frequencies?partition=region=east&top=3",
    "/api/tables/sales/columns/n/histogram?partition=region=east&start=0&stop=4",
    "/api/tables/sales/estimate?where=n%20%3E%203",
    "/api/tables/sales/stats?columns=n,x",
    "/api/tables/sales/partitions",
    "/tables/sales?page=1",
]


def test_cache_evicts_least_recently_used_within_its_byte_budget() -> None:
    cache = AnswerCache(lifetime_seconds=60, max_bytes=30)
    for key in "abc":
        cache.put("t", 1, key, Answer(key.encode() * 10, f'"{key}"'))
    assert cache.get("t", 1, "a") == Answer(b"a" * 10, '"a"')  # now the most recent
    cache.put("t", 1, "d", Answer(b"d" * 10, '"d"'))
    assert cache.get("t", 1, "b") is None  # least recently used: dropped
    assert [cache.get("t", 1, k) is not None for k in "acd"] == [True] * 3
    assert cache.get("t", 2, "a") is None and cache.get("u", 1, "a") is None
    cache.put("t", 1, "huge", Answer(b"x" * (2 * 1024 * 1024), '"x"'))
    assert cache.get("t", 1, "huge") is None and len(cache) == 3
    assert (cache.hits, cache.misses) == (4, 4)


def test_cache_forgets_everything_after_its_lifetime() -> None:
    cache = AnswerCache(lifetime_seconds=0.05)
    cache.put("t", 1, "a", Answer(b"1", '"1"'))
    assert cache.get("t", 1, "a") is not None
    time.sleep(0.06)
    assert cache.get("t", 1, "a") is None and len(cache) == 0


def _partition_east(client: TestClient) -> dict:
    response = client.get(URLS[0])
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.spark
def test_answers_cached_per_version_and_new_version_served(
    tmp_path: Path, spark, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = analyzed_sales(tmp_path, spark)
    table = ls.open_table(config.table)
    app = create_app([config])
    tables = app.state.tables
    tables.refresh_seconds = 0  # check for a new version on every request
    with TestClient(app) as client:
        first = {url: client.get(url) for url in URLS}
        assert all(r.status_code == 200 for r in first.values()), first
        cached = len(tables.answers)
        assert cached == len(URLS)
        hits = tables.answers.hits
        again = {url: client.get(url) for url in URLS}
        assert tables.answers.hits == hits + len(URLS)
        for url in URLS:
            assert again[url].content == first[url].content
            assert again[url].headers.get("etag") == first[url].headers.get("etag")

        # the cached answer is the facade's, computed afresh (the API is a thin face)
        body = _partition_east(client)
        fresh = table.statistics("region=east", ["n", "word"])
        assert body["columns"] == [jsonable(column_row(r)) for r in fresh]

        # as_of answers depend on which snapshot is current: never cached (a Parquet
        # directory has no snapshots: here the current one stands for the one at as_of)
        monkeypatch.setattr(ls, "snapshot_as_of", lambda table, moment: None)
        as_of = dt.datetime.now(dt.UTC).isoformat()
        for _ in range(2):
            response = client.get(URLS[1] + "&" + urlencode({"as_of": as_of}))
            assert response.status_code == 200, response.text
            assert response.json() == first[URLS[1]].json()
        assert len(tables.answers) == cached and tables.answers.hits == hits + len(URLS) + 1

        # a version published while the server runs is what the next requests get
        extra = pa.table({"n": pa.array([1, 2, None]), "x": [1.0, 2.0, 3.0],
                          "word": ["new", "new", "new"],
                          "day": [dt.date(2030, 1, 1)] * 3,
                          "amount": pa.array([decimal.Decimal("1.00")] * 3,
                                             pa.decimal128(9, 2))})
        pq.write_table(extra, Path(config.table) / "region=east" / "part-1.parquet")
        table.analyze(spark=spark)
        latest = ls.open_table(config.table)
        after = {url: client.get(url) for url in URLS}
        for url in URLS:
            assert after[url].status_code == 200, after[url].text
            if url.startswith("/api"):
                assert after[url].headers["etag"] != first[url].headers["etag"], url
        [(total,)] = duck(config.table).execute("SELECT count(*) FROM sales").fetchall()
        assert f'<dd id="row-count">{total:,}</dd>' in after[URLS[-1]].text
        assert f'<dd id="row-count">{total - 3:,}</dd>' in first[URLS[-1]].text
        body = _partition_east(client)
        [(rows, words)] = duck(config.table).execute(
            "SELECT count(*), count(DISTINCT word) FROM sales WHERE region = 'east'"
        ).fetchall()
        assert body["version"] == latest.reader().version.version == first_version(first) + 1
        assert body["row_count"] == rows
        assert {c["name"]: c["distinct_count"] for c in body["columns"]}["word"] == words
        fresh = latest.statistics("region=east", ["n", "word"])
        assert body["columns"] == [jsonable(column_row(r)) for r in fresh]
        top = client.get(URLS[2]).json()["frequencies"]
        assert [(f["value"], f["frequency"]) for f in top] == list(
            latest.frequencies("word", "region=east", 3)
        )

        # an old ETag is not answered with 304 any more; the new one is
        old = first[URLS[0]].headers["etag"]
        assert client.get(URLS[0], headers={"If-None-Match": old}).status_code == 200
        new = after[URLS[0]].headers["etag"]
        assert client.get(URLS[0], headers={"If-None-Match": new}).status_code == 304


def first_version(responses: dict) -> int:
    return responses[URLS[0]].json()["version"]


@pytest.mark.spark
def test_a_new_table_snapshot_is_seen_as_stale_with_the_statistics_files_kept(
    tmp_path: Path, spark
) -> None:
    from deltalake import write_deltalake

    from lakestats.service.config import TableConfig
    from lakestats.service.tables import TableSet

    path = str(tmp_path / "events")
    write_deltalake(path, pa.table({"n": pa.array(range(100), pa.int64())}))
    ls.open_table(path).analyze(spark=spark)
    tables = TableSet([TableConfig(name="events", table=path)], refresh_seconds=0,
                      reopen_seconds=0)
    table = tables.get("events")
    reader = table.table.reader()  # the guarded handle's table handle
    before = table.table_statistics()
    assert before.stale is False and before.row_count == 100
    write_deltalake(path, pa.table({"n": pa.array(range(5), pa.int64())}), mode="append")
    again = tables.get("events")  # past reopen_seconds: the table is re-read
    after = again.table_statistics()
    assert after.stale is True and after.staleness.snapshots_behind == 1
    assert again.table.reader() is reader  # the open statistics files were kept
    assert after.row_count == before.row_count == 100  # what the version describes


def test_warm_up_loads_what_the_first_overview_would_import() -> None:
    """pyarrow imports pandas on its first value conversion (1.1 s of the 1,000-column
    overview's first load): a warmed-up worker has done it before any request."""
    import subprocess
    import sys

    pytest.importorskip("pandas")
    code = (
        "import sys\n"
        "from lakestats.service.tables import TableSet\n"
        "before = 'pandas' in sys.modules\n"
        "TableSet([]).warm_up()\n"
        "print(before, 'pandas' in sys.modules)\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert found.stdout.split() == ["False", "True"]
