"""Access control of the service, against real analyzed tables and a real tables file:
tokens (401/403 in the documented JSON shape, granted listings, the login cookie), and
sensitive columns, whose planted values must not appear in any answer of any route or
page, however asked (every route of the app, then Schemathesis over /openapi.json)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from starlette.routing import Route

import lakestats.api as ls
from lakestats.errors import ConfigurationError
from lakestats.service.app import create_app
from lakestats.service.config import TableConfig, load_service
from lakestats.service.tables import TableSet
from lakestats.service.tokens import TokenSet, digest, new_secret
from tests.service.test_service_fixture import write_sales

pytestmark = pytest.mark.spark
REGIONS = ("east", "west")
CITIES = ("Zyxville", "Qorbtown", "Plimford")
SENSITIVE = ("email", "card", "salary")
DERIVED = "email = 'zq1-secret@example.invalid'"
DERIVED_OPEN = "n > 3 AND email IS NOT NULL"  # compares no sensitive column with a value
# every form a planted value of a sensitive column could take in an answer: the e-mail
# addresses and card numbers, the salaries as digits, with thousands separators and as
# six significant digits (min, max, mean, percentiles, histogram edges, page cells)
LEAKS = re.compile(r"secret@|example\.invalid|zq\d+-|4929-|8642013|8,642,013|8\.64201")
COLUMNS = ("email", "card", "salary", "city", "n", "region")


def write_people(root: Path) -> Path:
    """Two partitions of people: planted e-mails, card numbers and salaries (sensitive),
    cities and small numbers (not)."""
    for p, region in enumerate(REGIONS):
        rows = 300 + 20 * p
        directory = root / f"region={region}"
        directory.mkdir(parents=True, exist_ok=True)
        pq.write_table(
            pa.table({
                "email": [f"zq{i % 40}-secret@example.invalid" for i in range(rows)],
                "card": [f"4929-0000-0000-{i % 50:04d}" for i in range(rows)],
                "salary": pa.array([8642013500 + (i * 7 + p) % 400 for i in range(rows)]),
                "city": [CITIES[i % 3] if i % 5 else CITIES[0] for i in range(rows)],
                "n": pa.array([i % 10 for i in range(rows)]),
            }),
            directory / "part-0.parquet",
        )
    return root


@pytest.fixture(scope="module")
def secrets() -> dict[str, str]:
    return {"all": new_secret(), "people": new_secret(), "sales": new_secret()}


@pytest.fixture(scope="module")
def tables_file(tmp_path_factory: pytest.TempPathFactory, spark, secrets) -> Path:
    """The documented syntax: two tables, one with sensitive columns, three tokens."""
    base = tmp_path_factory.mktemp("access")
    people = write_people(base / "people")
    ls.open_table(str(people)).analyze(spark=spark)
    ls.open_table(str(people)).analyze(spark=spark, where=DERIVED)  # in history
    ls.open_table(str(people)).analyze(spark=spark, where=DERIVED_OPEN)
    sales = write_sales(base / "sales")
    ls.open_table(str(sales)).analyze(spark=spark)
    path = base / "tables.toml"
    path.write_text(
        '[tables.people]\ntable = "./people"\nsensitive = ["email", "card", "salary"]\n\n'
        '[tables.sales]\ntable = "./sales"\n\n'
        f'[tokens.all]\nhash = "{digest(secrets["all"])}"\ntables = "*"\n\n'
        f'[tokens.people]\nhash = "{digest(secrets["people"])}"\ntables = ["people"]\n\n'
        f'[tokens.sales]\nhash = "{digest(secrets["sales"])}"\ntables = ["sales"]\n'
    )
    return path


@pytest.fixture(scope="module")
def guarded(tables_file: Path):
    service = load_service(tables_file)
    with TestClient(create_app(service.tables, tokens=service.tokens)) as client:
        yield client


@pytest.fixture(scope="module")
def open_service(tables_file: Path):
    """The same tables with no token: open, the columns still sensitive."""
    with TestClient(create_app(load_service(tables_file).tables)) as client:
        yield client


def _auth(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def _error(response, status: int, kind: str, words: str = "") -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}
    assert body["error"]["type"] == kind, body
    assert words in body["error"]["message"], body
    return body


# -- tokens -------------------------------------------------------------------------------


def test_several_workers_get_the_tables_and_tokens(tables_file: Path, monkeypatch) -> None:
    """``serve --workers N`` passes the file's tables and tokens (hashes) to each worker
    in the environment: the same service comes out."""
    import json

    from lakestats import config
    from lakestats.service.app import CONFIG_ENV, app_from_env, service_to_json

    service = load_service(tables_file)
    monkeypatch.setenv(CONFIG_ENV, json.dumps(service_to_json(service)))
    with config.use(config.load()):
        app = app_from_env()
    assert list(app.state.tables.configs.values()) == service.tables
    assert app.state.tokens.tokens == tuple(service.tokens)


def test_the_tables_file_is_read_as_documented(tables_file: Path, secrets) -> None:
    service = load_service(tables_file)
    assert [(c.name, c.sensitive) for c in service.tables] == [
        ("people", SENSITIVE), ("sales", ())
    ]
    tokens = TokenSet(service.tokens)
    assert {t.name: t.tables for t in service.tokens} == {
        "all": None, "people": frozenset({"people"}), "sales": frozenset({"sales"})
    }
    assert tokens.match(secrets["people"]).name == "people"
    assert tokens.match(secrets["people"] + "x") is None
    assert secrets["all"] not in tables_file.read_text()  # only hashes are stored


@pytest.mark.parametrize(
    ("headers", "challenge"),
    [
        ({}, 'Bearer realm="lakestats"'),
        ({"Authorization": "Bearer lst_not-a-token"}, 'error="invalid_token"'),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, 'error="invalid_token"'),
        ({"Authorization": "Bearer "}, 'error="invalid_token"'),
    ],
)
def test_no_valid_token_is_401_on_every_api_route(guarded, headers, challenge) -> None:
    for url in ("/api/tables", "/api/tables/people/statistics", "/api/tables/nope",
                "/api/tables/people/columns/email/frequencies", "/api/nothing",
                "/api/tables/sales/stats?columns="):
        response = guarded.get(url, headers=headers)
        body = _error(response, 401, "AuthenticationError")
        assert challenge in response.headers["www-authenticate"], url
        assert "sales" not in body["error"]["message"]  # not even the table names
    _error(guarded.post("/api/tables/people/estimate", json={"where": ["n > 1"]},
                        headers=headers), 401, "AuthenticationError")
    # what holds no table data stays public: the API's description and the login form
    assert guarded.get("/openapi.json").status_code == 200
    assert guarded.get("/login").status_code == 200


def test_a_token_reads_only_its_tables(guarded, secrets) -> None:
    sales = _auth(secrets["sales"])
    assert [t["name"] for t in guarded.get("/api/tables", headers=sales).json()] == ["sales"]
    assert guarded.get("/api/tables/sales/statistics", headers=sales).status_code == 200
    for url in ("/api/tables/people/statistics", "/api/tables/people",
                "/api/tables/nope/versions", "/tables/people", "/tables/people/cells"):
        _error(guarded.get(url, headers=sales), 403, "PermissionDeniedError", "no grant")
    people = guarded.app.state.tables.configs["people"].table  # a planner's question by location
    located = {"location": people, "where": ["n > 1"]}
    _error(guarded.post("/api/estimate", json=located, headers=sales), 403,
           "PermissionDeniedError", "no grant")
    assert guarded.post("/api/estimate", json=located,
                        headers=_auth(secrets["all"])).status_code == 200
    index = guarded.get("/", headers=sales).text
    assert 'href="/tables/sales"' in index and "/tables/people" not in index
    everything = _auth(secrets["all"])
    names = [t["name"] for t in guarded.get("/api/tables", headers=everything).json()]
    assert names == ["people", "sales"]
    _error(guarded.get("/api/tables/nope", headers=everything), 404, "TableNotFoundError",
           "served tables: people, sales")


def test_the_login_form_sets_a_cookie_the_pages_accept(guarded, secrets) -> None:
    page = guarded.get("/tables/people", headers={"Accept": "text/html"})
    assert page.status_code == 401 and 'id="login"' in page.text
    assert 'name="next" value="/tables/people"' in page.text
    assert page.headers["www-authenticate"].startswith("Bearer")
    wrong = guarded.post("/login", data={"token": "lst_guess", "next": "/"},
                         follow_redirects=False)
    assert wrong.status_code == 401 and "not valid" in wrong.text
    assert "set-cookie" not in wrong.headers
    done = guarded.post("/login", data={"token": secrets["people"], "next": "//evil.example/"},
                        follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == "/"  # never another site
    cookie = done.headers["set-cookie"]
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    jar = {"lakestats_token": secrets["people"]}
    with TestClient(guarded.app, cookies=jar) as browser:
        index = browser.get("/")
        assert index.status_code == 200 and "/tables/people" in index.text
        assert "/tables/sales" not in index.text and 'action="/logout"' in index.text
        assert browser.get("/tables/people/cells").status_code == 200
        _error(browser.get("/api/tables/sales"), 403, "PermissionDeniedError")
        out = browser.post("/logout", follow_redirects=False)
        assert out.status_code == 303 and 'lakestats_token=""' in out.headers["set-cookie"]
    # a header present wins over the cookie, even a wrong one
    with TestClient(guarded.app, cookies=jar) as browser:
        _error(browser.get("/api/tables", headers={"Authorization": "Bearer x"}), 401,
               "AuthenticationError")


# -- sensitive columns --------------------------------------------------------------------


def test_sensitive_columns_keep_counts_only(open_service) -> None:
    client = open_service
    info = client.get("/api/tables/people").json()
    marked = {c["name"] for c in info["columns"] if c.get("sensitive")}
    assert marked == set(SENSITIVE)
    rows = {c["name"]: c for c in client.get("/api/tables/people/statistics").json()["columns"]}
    for name in SENSITIVE:
        assert rows[name]["sensitive"] is True
        assert {"min", "max", "mean", "p50", "histogram_bins"}.isdisjoint(rows[name])
        assert rows[name]["null_count"] == 0 and rows[name]["row_count"] == 620
    assert rows["email"]["distinct_count"] == 40
    assert rows["city"]["min"] == "Plimford" and "sensitive" not in rows["city"]
    for url, what in [
        ("columns/email/frequencies", "most frequent values"),
        ("columns/salary/histogram", "histogram"),
        ("columns/card/partitions-containing?value=4929-0000-0000-0001", "values"),
        (f"estimate?where={quote(DERIVED)}", "predicates"),
        ("estimate?where=salary > 8642013600", "predicates"),
        ("estimate?where=n > 2 OR card LIKE '4929%25'", "predicates"),
        (f"predicate-statistics?where={quote(DERIVED)}", "predicates"),
    ]:
        _error(client.get(f"/api/tables/people/{url}"), 403, "SensitiveColumnError", what)
    batch = client.post("/api/tables/people/estimate",
                        json={"where": ["n > 3", "email <> 'x'"]})
    _error(batch, 403, "SensitiveColumnError", "predicate 2 of 2")
    nulls = client.get("/api/tables/people/estimate?where=email IS NULL AND n > 3").json()
    assert nulls["row_count"] == 0 and nulls["exact"] is True  # counts stay answered
    city = client.get("/api/tables/people/columns/city/frequencies").json()
    assert city["frequencies"][0]["value"] == "Zyxville"
    entries = [v for v in client.get("/api/tables/people/versions").json()
               if v.get("kind") == "derived"]
    [derived] = [v for v in entries if v["predicate"] is None]
    [other] = [v for v in entries if v["predicate"] is not None]
    assert derived["predicate"] is None and derived["sensitive"] is True
    assert "email" in other["predicate"] and "sensitive" not in other
    kept = client.get("/api/tables/people/predicate-statistics",
                      params={"where": DERIVED_OPEN}).json()
    rows = {c["name"]: c for c in kept["table"]["columns"]}
    assert rows["email"]["sensitive"] is True and "min" not in rows["email"]
    assert kept["table"]["row_count"] == 6 * 62  # n in 4..9 of 620 rows
    column = client.get("/tables/people/columns/email").text
    assert 'id="sensitive"' in column and 'id="top-values"' not in column


def test_a_wrong_sensitive_column_is_refused(tables_file: Path) -> None:
    [people, _] = load_service(tables_file).tables
    for names, words in [(("emial",), "is not a column"), (("region",), "partition column")]:
        config = TableConfig(people.name, people.table, sensitive=names)
        with pytest.raises(ConfigurationError, match=words):
            TableSet([config]).check()
        with TestClient(create_app([config])) as client:
            _error(client.get("/api/tables/people/statistics"), 500, "ConfigurationError",
                   words)


def _routes(routes) -> list[Route]:
    """The app's routes, those of its included routers too (FastAPI keeps those inside an
    included-router entry; none is included under a prefix here)."""
    out: list[Route] = []
    for route in routes:
        if isinstance(route, Route):
            out.append(route)
        elif hasattr(route, "original_router"):
            out += _routes(route.original_router.routes)
    return out


def _requests(app) -> list[tuple[str, str, str, dict]]:
    """(template, method, url, json body) for every route of ``app``, its table ``people``,
    each column, and every query parameter the routes take, with planted values."""
    wheres = [DERIVED, DERIVED_OPEN, "email IS NULL", "salary > 8642013600", "card LIKE '4929%'",
              "city = 'Zyxville'", "n > 3", "salary BETWEEN 1 AND 9999999999"]
    queries: list[dict[str, object]] = [
        {}, {"partition": "region=east"}, {"columns": ",".join(COLUMNS[:-1])},
        {"columns": "email", "by_partition": "false"}, {"top": 100}, {"start": 0, "stop": 9},
        {"scale": "log"}, {"parts": 1}, {"page": 1}, {"table_level": "true"},
        {"value": "zq1-secret@example.invalid"}, {"value": "8642013501"},
        *({"where": w, "columns": "email,salary,city"} for w in wheres),
    ]
    out = []
    for route in _routes(app.routes):
        for method in sorted(route.methods or ()):
            if method == "HEAD":
                continue
            columns = COLUMNS if "{column" in route.path else ("",)
            for column in columns:
                path = route.path.replace("{table}", "people").replace("{column:path}", column)
                for query in queries:
                    url = path + ("?" + "&".join(f"{k}={quote(str(v))}" for k, v in query.items())
                                  if query else "")
                    body: dict[str, object] = {"where": [str(query.get("where", "n > 1"))]}
                    if route.path == "/api/estimate":  # the table named by its location
                        body["location"] = app.state.tables.configs["people"].table
                    if route.path == "/api/group-distinct":
                        body = {"location": app.state.tables.configs["people"].table,
                                "columns": COLUMNS[:2]}
                    out.append((route.path, method, url, body))
    return out


def _unechoed(text: str, asked: str) -> str:
    """``text`` without the planted values the request itself sent (an answer may repeat
    what it was asked: ``value``, a predicate); any other planted value still shows."""
    for sent in set(re.findall(r"zq\d+-secret@example\.invalid|4929[-\d]*%?|8642013\d*",
                               unquote(asked))):
        text = text.replace(sent, "")
    return text


@pytest.mark.parametrize("mode", ["open", "token"])
def test_no_route_or_page_shows_a_sensitive_value(request, mode: str, secrets) -> None:
    """Every route and page, every column, every parameter: no planted value of a sensitive
    column in any answer (nor an error); each route answered 200 at least once (the sweep
    reached it) and the non-sensitive planted values do show (the scan sees values)."""
    client = request.getfixturevalue("open_service" if mode == "open" else "guarded")
    headers = _auth(secrets["people"]) if mode == "token" else {}
    answered: dict[tuple[str, str], int] = {}
    seen_city = False
    for template, method, url, body in _requests(client.app):
        if template == "/login" and method == "POST":  # the form, with the token
            form = {"token": secrets["people"], "next": "/tables/people"}
            response = client.post(url, data=form, follow_redirects=False)
        elif method == "POST":
            response = client.post(url, json=body, headers=headers, follow_redirects=False)
        else:
            response = client.get(url, headers=headers, follow_redirects=False)
        assert response.status_code < 500, (url, response.text)
        found = LEAKS.search(_unechoed(response.text, url + str(body)))
        assert found is None, (method, url, response.text[max(0, found.start() - 200):][:400])
        if response.status_code in (200, 303):
            answered[(template, method)] = answered.get((template, method), 0) + 1
        seen_city = seen_city or "Zyxville" in response.text
    # the overview, cells and column pages' fragments, fetched as the browser fetches them
    for url in ("/tables/people/overview", "/tables/people/cells?page=1",
                "/tables/people/cells?partition=region%3Dwest", "/static/app.js"):
        response = client.get(url, headers=headers)
        assert response.status_code == 200 and LEAKS.search(response.text) is None, url
    routes = {(r.path, m) for r in _routes(client.app.routes) for m in (r.methods or ())
              if m != "HEAD"}
    assert len(routes) >= 20
    assert routes - set(answered) == set(), "routes the sweep never got a 200 from"
    openapi = client.get("/openapi.json").json()["paths"]
    assert {p.replace("{column}", "{column:path}") for p in openapi} <= {r for r, _ in routes}
    assert seen_city


def _fuzz(openapi, check) -> int:
    operations = [result.ok() for result in openapi.get_all_operations()]
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=15, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        def run(case) -> None:
            check(case)

        run()
    return len(operations)


def test_fuzzed_api_unauthenticated_is_401_everywhere(guarded) -> None:
    """Schemathesis over /openapi.json with no token, then a wrong one: every answer is
    the 401 in the documented shape."""
    openapi = schemathesis.openapi.from_asgi("/openapi.json", guarded.app)

    def check(case) -> None:
        for headers in ({}, {"Authorization": "Bearer lst_wrong"}):
            response = case.call(headers=headers)
            assert response.status_code == 401, (case.formatted_path, response.text)
            assert response.json()["error"]["type"] == "AuthenticationError"
            challenge = {k.lower(): v for k, v in response.headers.items()}["www-authenticate"]
            assert "".join(challenge).startswith("Bearer")

    assert _fuzz(openapi, check) >= 10


@pytest.mark.parametrize("token", ["all", "sales"])
def test_fuzzed_api_with_a_token_never_5xx_nor_leaks(guarded, secrets, token: str) -> None:
    """Schemathesis over /openapi.json with a token (every table, or sales only), table
    names drawn from the served ones: no 5xx, every 4xx in the documented shape, 403 for
    an ungranted table, no sensitive value in any answer."""
    openapi = schemathesis.openapi.from_asgi("/openapi.json", guarded.app)
    headers = _auth(secrets[token])
    statuses: set[int] = set()

    def check(case) -> None:
        if case.path_parameters and "table" in case.path_parameters:  # a served table
            drawn = str(case.path_parameters["table"])
            case.path_parameters["table"] = "people" if len(drawn) % 2 else "sales"
        response = case.call(headers=headers)
        where = f"{case.method} {case.formatted_path} {case.query}"
        statuses.add(response.status_code)
        assert response.status_code < 500, f"{where}: {response.text}"
        assert LEAKS.search(response.text) is None, f"{where}: {response.text[:500]}"
        if response.status_code >= 400:
            body = response.json()
            assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}, where
            if token == "sales" and case.path_parameters.get("table") == "people":
                assert response.status_code == 403, where

    assert _fuzz(openapi, check) >= 10
    assert 200 in statuses
