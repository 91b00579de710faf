"""The HTTP API against a small analyzed table: numbers equal DuckDB's over the same files
and the facade's answers; errors come as 4xx ``{"error": {"type", "message"}}``; ETags and
304s; path-traversal attempts in table names are refused; the pages show the numbers."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings

import lakestats.api as ls
from lakestats.service.app import create_app
from tests.service.test_service_fixture import REGIONS, analyzed_sales, duck

pytestmark = pytest.mark.spark
COLUMNS = ("n", "x", "word", "day", "amount")


@pytest.fixture(scope="module")
def openapi(served):
    client, _, _ = served
    return schemathesis.openapi.from_asgi("/openapi.json", client.app)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, spark):
    config = analyzed_sales(tmp_path_factory.mktemp("service"), spark)
    app = create_app([config])
    app.state.tables.refresh_seconds = 0  # see a new version at once (last test)
    with TestClient(app) as client:
        yield client, config, ls.open_table(config.table)


def _error(response, status: int, kind: str, words: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}
    assert body["error"]["type"] == kind
    assert words in body["error"]["message"]
    assert "Traceback" not in response.text


def test_tables_and_versions(served) -> None:
    client, config, table = served
    con = duck(config.table)
    [(rows,)] = con.execute("SELECT count(*) FROM sales").fetchall()
    [summary] = client.get("/api/tables").json()
    assert summary["name"] == "sales" and summary["row_count"] == rows
    assert summary["partitions"] == len(REGIONS) and summary["table_level"] is True
    info = client.get("/api/tables/sales").json()
    assert [c["name"] for c in info["columns"]] == [*COLUMNS, "region"]
    assert client.get("/api/tables/sales/versions").json() == table.history().to_json()
    parts = client.get("/api/tables/sales/partitions").json()["partitions"]
    counts = dict(con.execute("SELECT region, count(*) FROM sales GROUP BY 1").fetchall())
    assert {p["partition"]["region"]: p["row_count"] for p in parts} == counts
    assert all(set(p) == {"partition", "name", "path", "row_count"} for p in parts)
    assert all(p["path"] == p["name"] for p in parts)  # the partition's own path, not the server's


def _expected(con, where: str = "TRUE") -> dict[str, dict[str, object]]:
    out = {}
    for column in COLUMNS:
        value = "CASE WHEN isnan(x) THEN NULL ELSE x END" if column == "x" else column
        nulls, distinct, low, high = con.execute(
            f"SELECT count(*) - count({column}), count(DISTINCT {column}), min({value}), "
            f"max({value}) FROM sales WHERE {where}"
        ).fetchone()
        out[column] = {"null_count": nulls, "distinct_count": distinct, "min": low, "max": high}
    return out


def _json_of(value: object) -> object:
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


@pytest.mark.parametrize("region", [None, "north"])
def test_statistics_match_duckdb(served, region: str | None) -> None:
    client, config, _ = served
    con = duck(config.table)
    params = {"partition": f"region={region}"} if region else {}
    data = client.get("/api/tables/sales/statistics", params=params).json()
    expected = _expected(con, f"region = '{region}'" if region else "TRUE")
    assert [c["name"] for c in data["columns"]] == [*COLUMNS, "region"]
    for column in data["columns"][: len(COLUMNS)]:
        want = expected[column["name"]]
        assert column["null_count"] == want["null_count"]
        assert column["distinct_count"] == want["distinct_count"]  # NaN: one value in both
        for key in ("min", "max"):
            got, ref = column[key], _json_of(want[key])
            assert math.isclose(got, ref) if isinstance(ref, float) else got == ref
    if region is None:
        assert data["stale"] is False and data["snapshots_behind"] == 0
    else:
        assert data["partition"] == {"region": region}


def test_statistics_column_subset_and_snapshot_params(served) -> None:
    client, _, table = served
    data = client.get("/api/tables/sales/statistics?columns=word,n").json()
    assert [c["name"] for c in data["columns"]] == ["word", "n"]
    _error(client.get("/api/tables/sales/statistics?columns=nope"), 404, "ColumnNotFoundError",
           "'nope'")
    _error(client.get("/api/tables/sales/statistics?snapshot=1&as_of=2024-01-01"), 400,
           "InvalidArgumentError", "not both")
    _error(client.get("/api/tables/sales/statistics?as_of=yesterday"), 400,
           "InvalidArgumentError", "ISO-8601")


def test_stats_batched_match_duckdb(served) -> None:
    client, config, table = served
    con = duck(config.table)
    params = {"columns": "n,word", "where": "region IN ('east', 'west')"}
    data = client.get("/api/tables/sales/stats", params=params).json()
    assert data["table"]["partitions"] == 3 and data["table"]["partitions_matched"] == 2
    assert [p["partition"]["region"] for p in data["partitions"]] == ["east", "west"]
    for part in data["partitions"]:
        want = _expected(con, f"region = '{part['partition']['region']}'")
        for column in part["columns"]:
            ref = want[column["name"]]
            assert (column["null_count"], column["distinct_count"]) == (
                ref["null_count"], ref["distinct_count"]
            )
            assert (column["min"], column["max"]) == (ref["min"], ref["max"])
    level = client.get("/api/tables/sales/stats?columns=n&by_partition=false").json()
    assert "partitions" not in level and level["table"]["columns"][0]["name"] == "n"
    _error(client.get("/api/tables/sales/stats?columns=n&where=n >"), 400,
           "InvalidPredicateError", "cannot parse")


def test_frequencies_histogram_and_holders(served) -> None:
    client, config, table = served
    con = duck(config.table)
    counts = dict(con.execute("SELECT word, count(*) FROM sales GROUP BY 1").fetchall())
    top = client.get("/api/tables/sales/columns/word/frequencies?top=3").json()
    assert [f["frequency"] for f in top["frequencies"]] == sorted(counts.values())[::-1][:3]
    assert all(counts[f["value"]] == f["frequency"] for f in top["frequencies"])
    assert top["truncated"] is False and top["distinct_count"] == len(counts)
    bins = client.get("/api/tables/sales/columns/n/histogram?partition=region=west").json()
    [(non_null,)] = con.execute("SELECT count(n) FROM sales WHERE region = 'west'").fetchall()
    assert sum(b["count"] for b in bins["bins"]) == non_null
    window = client.get("/api/tables/sales/columns/n/histogram?start=2&stop=5").json()
    assert (window["start"], window["stop"]) == (2, 5)
    assert [b["count"] for b in window["bins"]] == [
        b["count"] for b in table.histogram("n", None, 2, 5).rows()
    ]
    low, high = window["bins"][0]["lower"], window["bins"][-1]["upper"]
    [(inside,)] = con.execute(
        f"SELECT count(*) FROM sales WHERE n >= {low} AND n < {high}"
    ).fetchall()
    assert sum(b["count"] for b in window["bins"]) == inside
    holders = client.get("/api/tables/sales/columns/word/partitions-containing?value=dög").json()
    want = dict(
        con.execute("SELECT region, count(*) FROM sales WHERE word = 'dög' GROUP BY 1").fetchall()
    )
    assert {h["partition"]["region"]: h["frequency"] for h in holders["partitions"]} == want
    _error(client.get("/api/tables/sales/columns/word/histogram"), 400, "InvalidArgumentError",
           "has no histogram")
    _error(client.get("/api/tables/sales/columns/day/partitions-containing?value=soon"), 400,
           "InvalidArgumentError", "is not a value of column")
    _error(client.get("/api/tables/sales/columns/n/frequencies?top=-1"), 400, "ValidationError",
           "top")


def test_estimate_and_predicate_statistics(served) -> None:
    client, config, table = served
    con = duck(config.table)
    where = "n IS NULL AND region = 'east'"
    data = client.get("/api/tables/sales/estimate", params={"where": where}).json()
    [(truth,)] = con.execute(f"SELECT count(*) FROM sales WHERE {where}").fetchall()
    assert data["exact"] is True and data["row_count"] == truth
    assert data == table.estimate(where).to_json()
    word = client.get("/api/tables/sales/estimate?where=word <> 'ant'").json()
    [(kept,)] = con.execute("SELECT count(*) FROM sales WHERE word <> 'ant'").fetchall()
    assert word["lower"] <= kept <= word["upper"]
    _error(client.get("/api/tables/sales/estimate?where=lower(word) = 'a'"), 400,
           "UnsupportedPredicateError", "")
    missing = client.get("/api/tables/sales/predicate-statistics?where=n > 3")
    command = 'lakestats analyze <table sales> --where "n > 3"'  # no server path
    _error(missing, 404, "StatisticsNotFoundError", command)
    _error(client.get("/api/tables/sales/predicate-statistics?where=n >"), 400,
           "InvalidPredicateError", "")


def test_estimate_batch_route(served) -> None:
    """``POST /estimate`` with a list: the facade's batch, each answer the ``GET``'s;
    bad bodies are 400s in the documented shape."""
    client, _, table = served
    wheres = ["n IS NULL AND region = 'east'", "word <> 'ant'", "n > 3", "x < 0.5"]
    response = client.post("/api/tables/sales/estimate", json={"where": wheres})
    assert response.status_code == 200, response.text
    data = response.json()
    assert data == table.estimate_many(wheres).to_json()
    for where, got in zip(wheres, data["estimates"], strict=True):
        assert got == client.get("/api/tables/sales/estimate", params={"where": where}).json()
    level = client.post(
        "/api/tables/sales/estimate", json={"where": wheres[:2], "table_level": True}
    ).json()
    assert level == table.estimate_many(wheres[:2], table_level=True).to_json()
    again = client.post("/api/tables/sales/estimate", json={"where": wheres},
                        headers={"If-None-Match": response.headers["etag"]})
    assert again.status_code == 304
    url = "/api/tables/sales/estimate"
    _error(client.post(url, json={"where": []}), 400, "ValidationError", "where")
    _error(client.post(url, json={"where": "n > 3"}), 400, "ValidationError", "where")
    _error(client.post(url, json={"where": ["n > 3"], "nope": 1}), 400, "ValidationError",
           "nope")
    _error(client.post(url, content=b"{not json"), 400, "ValidationError", "")
    _error(client.post(url, json={"where": ["n > 3", "n >"]}), 400, "InvalidPredicateError",
           "predicate 2 of 2")
    _error(client.post(url, json={"where": ["lower(word) = 'a'"]}), 400,
           "UnsupportedPredicateError", "")
    _error(client.post(url, json={"where": ["nope = 1"]}), 404, "ColumnNotFoundError", "nope")
    _error(client.post("/api/tables/other/estimate", json={"where": ["n > 3"]}), 404,
           "TableNotFoundError", "other")


def test_estimate_by_location_route(served) -> None:
    """``POST /api/estimate`` names the table by its location as an engine spells it (a
    path, ``file:`` and ``file://`` URIs, a trailing slash): the answer of the table's own
    batch route without the per-partition lists a planner does not read (``by_partition``
    asks for them); no served table there is a 404 that does not say where tables are."""
    client, config, table = served
    wheres = ["word <> 'ant'", "n > 3 AND region = 'east'"]
    place = str(Path(config.table).resolve())
    full = table.estimate_many(wheres).to_json()
    want = {**full, "estimates": [{k: v for k, v in e.items() if k != "partitions"}
                                  for e in full["estimates"]]}
    assert all(e["partitions"] for e in full["estimates"])  # there was a list to leave out
    for spelled in (place, f"file:{place}", f"file://{place}/", Path(place).as_uri()):
        response = client.post("/api/estimate", json={"location": spelled, "where": wheres})
        assert response.status_code == 200, (spelled, response.text)
        assert response.json() == want
    listed = client.post("/api/estimate",
                         json={"location": place, "where": wheres, "by_partition": True})
    assert listed.json() == full
    batch = client.post("/api/tables/sales/estimate", json={"where": wheres})
    assert batch.json() == full
    totals = client.post("/api/tables/sales/estimate",
                         json={"where": wheres, "by_partition": False})
    assert totals.json() == want and totals.headers["etag"] != batch.headers["etag"]
    snapshot = want["snapshot_id"]
    pinned = client.post("/api/estimate", json={
        "location": place, "where": wheres, "snapshot_id": snapshot, "by_partition": True})
    assert pinned.json() == table.estimate_many(wheres, snapshot).to_json()
    for elsewhere in (place + "-other", "s3://bucket/sales", "file:/\x00"):
        _error(client.post("/api/estimate", json={"location": elsewhere, "where": wheres}),
               404, "TableNotFoundError", "no served table is at that location")
    _error(client.post("/api/estimate", json={"where": wheres}), 400, "ValidationError",
           "location")


def test_etags_and_not_modified(served) -> None:
    client, _, _ = served
    first = client.get("/api/tables/sales/statistics?partition=region=east")
    tag = first.headers["etag"]
    again = client.get("/api/tables/sales/statistics?partition=region=east",
                       headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == tag
    other = client.get("/api/tables/sales/statistics?partition=region=west")
    assert other.headers["etag"] != tag
    assert client.get("/api/tables/sales/statistics?partition=region=east",
                      headers={"If-None-Match": '"other"'}).status_code == 200


@pytest.mark.parametrize(
    "url",
    [
        "/api/tables/nope/versions",
        "/api/tables/../../etc/passwd",
        "/api/tables/..%2F..%2Fetc%2Fpasswd/versions",
        "/api/tables/%2Fetc%2Fpasswd/statistics",
        "/api/tables//etc/passwd",
        "/api/tables/file:%2F%2F%2Fetc%2Fpasswd/versions",
        "/api/tables/s3:%2F%2Fbucket%2Fsales/versions",
        "/api/tables/%2E%2E/versions",
        "/tables/..%2F..%2Fetc",
        "/tables/file:%2F%2F%2Fetc%2Fpasswd",
    ],
)
def test_path_traversal_refused(served, url: str) -> None:
    client, config, _ = served
    response = client.get(url)
    assert response.status_code in (400, 404), response.text
    if url.startswith("/api"):
        assert set(response.json()["error"]) == {"type", "message"}
    direct = client.get("/api/tables/" + config.table.replace("/", "%2F") + "/versions")
    assert direct.status_code == 404  # the table's own path is no name


def test_errors_in_shape(served) -> None:
    client, _, _ = served
    _error(client.get("/api/tables/nope/statistics"), 404, "TableNotFoundError",
           "served tables: sales")
    _error(client.get("/api/tables/sales/statistics?partition=region=south"), 404,
           "PartitionNotFoundError", "region=south")
    _error(client.get("/api/tables/sales/statistics?partition=south"), 400,
           "InvalidArgumentError", "k=v")
    _error(client.get("/api/tables/sales/stats"), 400, "ValidationError", "columns")
    _error(client.get("/api/nothing"), 404, "NotFound", "no such endpoint")
    _error(client.post("/api/tables"), 405, "MethodNotAllowed", "")


def test_pages_show_the_numbers(served) -> None:
    client, _, _ = served
    assert 'href="/tables/sales"' in client.get("/").text
    api = client.get("/api/tables/sales/statistics").json()
    page = client.get("/tables/sales").text
    assert f'<dd id="row-count">{api["row_count"]:,}</dd>' in page
    assert page.count("<tr data-column=") == 6
    cells = client.get("/tables/sales/cells?page=1").json()
    assert "<svg" in cells["n"]["hist"] and cells["word"]["hist"] == ""
    top = client.get("/api/tables/sales/columns/word/frequencies?top=3").json()["frequencies"]
    assert [f'title="{f["value"]}"' in cells["word"]["top"] for f in top] == [True] * 3
    part = client.get("/tables/sales?partition=region=north").text
    assert '<option value="region=north" selected>' in part
    column = client.get("/tables/sales/columns/word?partition=region=east").text
    assert 'id="top-values"' in column and 'id="partitions"' in column
    zoom = client.get("/tables/sales/columns/n?start=3&stop=7").text
    assert "bins 3–7 of" in zoom
    missing = client.get("/tables/sales/columns/nope")
    assert missing.status_code == 404 and "has no statistics" in missing.text
    assert client.get("/tables/nope").status_code == 404


def test_new_version_is_served_with_a_new_etag(served, spark) -> None:
    client, config, table = served
    before = client.get("/api/tables/sales/statistics")
    extra = pa.table({"n": pa.array([1, 2, None]), "x": [1.0, 2.0, 3.0],
                      "word": ["new", "new", "new"],
                      "day": [dt.date(2030, 1, 1)] * 3,
                      "amount": pa.array([decimal.Decimal("1.00")] * 3, pa.decimal128(9, 2))})
    pq.write_table(extra, Path(config.table) / "region=east" / "part-1.parquet")
    table.analyze(spark=spark)
    after = client.get("/api/tables/sales/statistics")
    assert after.headers["etag"] != before.headers["etag"]
    assert after.json()["version"] == before.json()["version"] + 1
    assert after.json()["row_count"] == before.json()["row_count"] + 3


def test_fuzzed_api_never_5xx(openapi) -> None:
    """Schemathesis over /openapi.json, a bounded number of cases per operation: no 5xx,
    every 4xx in the documented shape."""
    operations = [result.ok() for result in openapi.get_all_operations()]
    assert len(operations) >= 10

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=25,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        def check(case) -> None:
            response = case.call()
            where = f"{case.method} {case.formatted_path} {case.query}"
            assert response.status_code < 500, f"{where}: {response.text}"
            if response.status_code >= 400:
                body = response.json()
                assert set(body) == {"error"}, where
                assert set(body["error"]) == {"type", "message"}, where
                assert isinstance(body["error"]["message"], str)
                assert "Traceback" not in response.text

        check()


def test_predicate_statistics_of_an_analyzed_predicate(tmp_path: Path, spark) -> None:
    config = analyzed_sales(tmp_path, spark)
    table = ls.open_table(config.table)
    where = "n > 3 AND region <> 'east'"
    table.analyze(spark=spark, where=where)
    con = duck(config.table)
    expected = _expected(con, where)
    [(kept,)] = con.execute(f"SELECT count(*) FROM sales WHERE {where}").fetchall()
    with TestClient(create_app([config])) as client:
        data = client.get("/api/tables/sales/predicate-statistics", params={"where": where})
        assert data.status_code == 200, data.text
        body = data.json()
        assert body["derived"] is True and body["table"]["row_count"] == kept
        for column in body["table"]["columns"]:
            if column["name"] not in expected:
                continue  # the partition column
            want = expected[column["name"]]
            assert column["null_count"] == want["null_count"]
            if column["distinct_count_exact"]:
                assert column["distinct_count"] == want["distinct_count"], column["name"]
            else:  # an estimate (sketches): its bounds hold the truth
                low, high = column["distinct_count_lower"], column["distinct_count_upper"]
                assert low <= want["distinct_count"] <= high, column["name"]
        other = client.get("/api/tables/sales/predicate-statistics?where=n > 4")
        _error(other, 404, "StatisticsNotFoundError", "--where")
