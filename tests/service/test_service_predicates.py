"""Over HTTP: what a planner generates is answered (200, the
estimate's bounds holding DuckDB's count), what is over a documented limit or a literal out
of its column's range is a 400 with the JSON error body, never a 500."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from lakestats.service.app import create_app
from tests.service.test_service_fixture import analyzed_sales, duck

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory, spark):
    config = analyzed_sales(tmp_path_factory.mktemp("service_predicates"), spark)
    with TestClient(create_app([config])) as client:
        yield client, duck(config.table)


@pytest.mark.parametrize(
    "where",
    [
        " OR ".join(f"n = {k}" for k in range(400)),
        "(" * 50 + "n = 3 OR region = 'east'" + ")" * 50,
        "NOT " * 500 + "n = 3",
        "NOT " * 501 + "n = 3",
    ],
    ids=["400 disjuncts", "50 parentheses", "500 NOTs", "501 NOTs"],
)
def test_planner_shapes_answered(client, where: str) -> None:
    http, con = client
    response = http.get("/api/tables/sales/estimate", params={"where": where})
    assert response.status_code == 200, response.text
    got = response.json()
    [(truth,)] = con.execute(f"SELECT count(*) FROM sales WHERE {where}").fetchall()
    assert got["lower"] <= truth <= got["upper"]
    stats = http.get("/api/tables/sales/stats", params={"columns": "n", "where": where})
    assert stats.status_code == 200, stats.text


@pytest.mark.parametrize(
    ("where", "words"),
    [
        ("(" * 101 + "n = 1" + ")" * 101, "over the limit of 100"),
        ("n IN (" + ", ".join("1" for _ in range(1_001)) + ")", "over the limit of 1,000"),
        ("n = 1e1000000", "outside the range of column 'n'"),
        ("n IN ()", "IN () lists no value"),
    ],
    ids=["101 parentheses", "1,001 IN values", "1e1000000", "IN ()"],
)
def test_beyond_the_limits_400(client, where: str, words: str,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKESTATS_MAX_IN_VALUES", "1000")  # the setting the message names
    http, _ = client
    for path, params in (("estimate", {}), ("stats", {"columns": "n"})):
        response = http.get(f"/api/tables/sales/{path}", params={**params, "where": where})
        assert response.status_code == 400, response.text
        body = response.json()
        assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}
        assert body["error"]["type"] in ("PredicateTooLargeError", "InvalidPredicateError"), body
        assert words in body["error"]["message"]
