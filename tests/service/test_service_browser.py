"""The pages in a real browser: headless Chromium (Debian's ``chromium``) driven by
Playwright against ``lakestats serve``'s app under uvicorn on 127.0.0.1. The numbers shown
must equal the JSON API's; choosing a partition switches every column; a column page opens;
screenshots go to the test's temp dir (and ``docs/service.png`` when it is missing or
``LAKESTATS_UPDATE_DOCS=1``)."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import httpx
import pytest

import lakestats.api as ls
from lakestats.service.app import create_app
from tests.service.test_service_fixture import analyzed_sales, duck
from tests.service.uvicorn_thread import serving

pytestmark = pytest.mark.spark
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync",
]
DOCS = Path(__file__).resolve().parents[2] / "docs"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def sales(tmp_path_factory: pytest.TempPathFactory, spark):
    return analyzed_sales(tmp_path_factory.mktemp("browser"), spark)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory, spark):
    """``tests/api/test_profile.py``'s table: one column per alert."""
    from lakestats.service.config import TableConfig
    from tests.api.test_profile import planted_table

    root = tmp_path_factory.mktemp("planted") / "t"
    planted_table(root)
    ls.open_table(str(root)).analyze(spark=spark)
    return TableConfig(name="planted", table=str(root))


@pytest.fixture(scope="module")
def base_url(sales, planted):
    import uvicorn

    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        pytest.fail("chromium is not installed: run `make browser` (apt-get install chromium)")
    configs = [sales, planted]
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(configs), host="127.0.0.1", port=port, log_level="warning")
    )
    url = f"http://127.0.0.1:{port}"
    with serving(server):
        yield url


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, timeout=60_000)
        yield browser
        browser.close()


def test_table_page_column_page_and_partition(base_url: str, browser, tmp_path: Path) -> None:
    api = httpx.Client(base_url=base_url, timeout=30)
    level = api.get("/api/tables/sales/statistics").json()
    page = browser.new_page(viewport={"width": 1400, "height": 700})
    page.set_default_timeout(30_000)
    page.goto(f"{base_url}/")
    page.click("text=sales")
    page.wait_for_url("**/tables/sales")
    assert page.inner_text("#row-count") == f"{level['row_count']:,}"
    assert page.inner_text("#version") == str(level["version"])
    rows = page.locator("#columns tbody tr")
    assert rows.count() == len(level["columns"])
    for column in level["columns"]:
        row = page.locator(f'#columns tr[data-column="{column["name"]}"]')
        assert row.locator(".null-count").inner_text() == f"{column['null_count']:,}"
        assert row.locator(".distinct").inner_text() == f"{column['distinct_count']:,}"
        if isinstance(column["min"], str):
            assert row.locator(".min").get_attribute("title") == column["min"]
    page.wait_for_selector('#columns-body[data-loaded="true"]')
    assert page.locator("#columns td.hist svg rect").count() > 0
    page.screenshot(path=str(tmp_path / "table.png"), full_page=True)
    if os.environ.get("LAKESTATS_UPDATE_DOCS") or not (DOCS / "service.png").exists():
        DOCS.mkdir(exist_ok=True)  # the README's screenshot; refreshed on request only
        page.screenshot(path=str(DOCS / "service.png"), full_page=True)

    north = api.get("/api/tables/sales/statistics?partition=region=north").json()
    page.select_option("#partition", "region=north")
    page.wait_for_url("**partition=region%3Dnorth**")
    page.wait_for_selector('#columns-body[data-loaded="true"]')
    assert page.inner_text("#row-count") == f"{north['row_count']:,}"
    top = api.get("/api/tables/sales/columns/word/frequencies?partition=region=north&top=3")
    shown = page.locator('#columns tr[data-column="word"] td.top .tv b').all_inner_texts()
    assert shown == [f"{f['frequency']:,}" for f in top.json()["frequencies"]]
    for column in north["columns"]:
        row = page.locator(f'#columns tr[data-column="{column["name"]}"]')
        assert row.locator(".null-count").inner_text() == f"{column['null_count']:,}"
    page.screenshot(path=str(tmp_path / "partition.png"), full_page=True)

    page.click('#columns tr[data-column="n"] td.name a')
    page.wait_for_url("**/tables/sales/columns/n?partition=**")
    bins = api.get("/api/tables/sales/columns/n/histogram?partition=region=north").json()
    assert page.locator("#histogram svg rect").count() == min(len(bins["bins"]), 200)
    top = api.get("/api/tables/sales/columns/n/frequencies?partition=region=north&top=100").json()
    assert page.locator("#top-values tbody tr").count() == len(top["frequencies"])
    assert page.locator("#partitions tbody tr").count() == 3
    page.locator("#histogram svg a").nth(2).click()
    page.wait_for_url("**start=2&stop=3**")
    assert "bins 2–3 of" in page.inner_text("h2")
    page.screenshot(path=str(tmp_path / "column.png"), full_page=True)
    assert (tmp_path / "column.png").stat().st_size > 1000


def _links_answer_200(page, api: httpx.Client) -> int:
    """Every link on the page, resolved as the browser resolves it, answers 200."""
    hrefs = page.eval_on_selector_all(  # an SVG link's .href is not a string: resolve it
        "a[href]",
        "links => links.map(a => new URL(a.getAttribute('href'), document.baseURI).href)",
    )
    for href in hrefs:
        assert api.get(href).status_code == 200, href
    return len(hrefs)


def test_column_page_partition_rows_and_every_link(base_url: str, browser) -> None:
    """The column page's partition table names each partition (it once showed the column's
    name on every row, and every link answered 400); clicking a row opens that partition;
    every link on the table and column pages answers 200."""
    api = httpx.Client(base_url=base_url, timeout=30)
    names = [p["name"] for p in api.get("/api/tables/sales/partitions").json()["partitions"]]
    page = browser.new_page(viewport={"width": 1400, "height": 700})
    page.set_default_timeout(30_000)
    page.goto(f"{base_url}/tables/sales")
    page.wait_for_selector('#columns-body[data-loaded="true"]')
    page.wait_for_selector('#overview[data-loaded="true"]')  # the alerts' links too
    assert _links_answer_200(page, api) > len(names)
    page.goto(f"{base_url}/tables/sales/columns/n")
    labels = page.locator("#partitions tbody tr td:first-child").all_inner_texts()
    assert labels == names
    stats = api.get("/api/tables/sales/stats?columns=n").json()
    shown = page.locator("#partitions tbody tr td:nth-child(2)").all_inner_texts()
    assert shown == [f"{p['row_count']:,}" for p in stats["partitions"]]
    assert _links_answer_200(page, api) > len(names)
    page.locator("#partitions tbody tr a").nth(1).click()
    page.wait_for_url("**/tables/sales/columns/n?partition=**")
    assert names[1] in page.inner_text("h1")


def test_overview_and_alerts_link_to_their_columns(base_url: str, browser) -> None:
    """The table page's overview and alerts are the profile's (the JSON API), each alert
    opens its column's page, and the columns show null and distinct shares."""
    api = httpx.Client(base_url=base_url, timeout=30)
    profile = api.get("/api/tables/sales/profile").json()
    level = api.get("/api/tables/sales/statistics").json()
    page = browser.new_page(viewport={"width": 1400, "height": 700})
    page.set_default_timeout(30_000)
    page.goto(f"{base_url}/tables/sales")
    page.wait_for_selector('#overview[data-loaded="true"]')
    assert page.inner_text("#columns-count") == str(profile["columns"])
    assert page.inner_text("#figures").startswith(f"{profile['exact_figures']} exact")
    shown = page.locator("#alerts li").evaluate_all(
        "items => items.map(li => [li.dataset.kind, li.dataset.column || null])"
    )
    assert shown == [[a["kind"], a["column"]] for a in profile["alerts"]]
    for column in level["columns"]:
        row = page.locator(f'#columns tr[data-column="{column["name"]}"]')
        nulls = 100 * column["null_count"] / column["row_count"]
        assert row.locator(".null-share").inner_text() == f"{nulls:.1f} %"
    for i, alert in enumerate(profile["alerts"]):
        if alert["column"] is None:
            continue
        page.goto(f"{base_url}/tables/sales")
        page.wait_for_selector('#overview[data-loaded="true"]')
        page.locator("#alerts li a").nth(
            sum(1 for a in profile["alerts"][:i] if a["column"] is not None)
        ).click()
        page.wait_for_url(f"**/tables/sales/columns/{alert['column']}")
        assert alert["column"] in page.inner_text("h1")


def test_charts_carry_their_numbers(base_url: str, browser, sales) -> None:
    """The column page's histogram has axes, each bar's tooltip count is DuckDB's count of
    its value range, the log toggle keeps every non-empty bin visible, the partition
    heat map shades every statistic, and the table page draws one bar per partition with
    its row count."""
    api = httpx.Client(base_url=base_url, timeout=30)
    con = duck(sales.table)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(30_000)
    page.goto(f"{base_url}/tables/sales")
    partitions = api.get("/api/tables/sales/partitions").json()["partitions"]
    bars = page.locator("#partition-rows rect")
    assert bars.count() == len(partitions)
    shown = bars.evaluate_all("rs => rs.map(r => [r.dataset.partition, +r.dataset.rows])")
    assert shown == [[p["name"], p["row_count"]] for p in partitions]
    for name, rows in shown:
        [(truth,)] = con.execute(
            "SELECT count(*) FROM sales WHERE region = ?", [name.split("=", 1)[1]]
        ).fetchall()
        assert rows == truth

    page.goto(f"{base_url}/tables/sales/columns/n")
    bins = api.get("/api/tables/sales/columns/n/histogram").json()["bins"]
    assert page.text_content("#axis-peak") == f"{max(b['count'] for b in bins):,}"
    rects = page.locator("#histogram rect")
    assert rects.count() == len(bins)  # fewer bins than bars: one bar per bin
    for i in (0, len(bins) // 2, len(bins) - 1):
        rects.nth(i).hover()
        title = rects.nth(i).locator("title").text_content()
        low, high = bins[i]["lower"], bins[i]["upper"]
        last = i == len(bins) - 1
        [(truth,)] = con.execute(
            f"SELECT count(*) FROM sales WHERE n >= ? AND n {'<=' if last else '<'} ?",
            [low, high],
        ).fetchall()
        assert title.endswith(f": {truth:,}"), (title, truth)
    page.click("#scale a")
    page.wait_for_url("**scale=log**")
    assert page.get_attribute("#histogram", "data-scale") == "log"
    heights = page.locator("#histogram rect").evaluate_all(
        "rs => rs.map(r => [+r.dataset.count, +r.getAttribute('height')])"
    )
    assert all(h > 0 for c, h in heights if c > 0)
    shaded = page.locator("#partitions td[style]")
    assert shaded.count() == 6 * len(partitions)
    # the mean column (drift of the partitions' means): DuckDB's avg per partition
    means = page.locator("#partitions tbody tr td:nth-child(8)").all_inner_texts()
    stats = api.get("/api/tables/sales/stats?columns=n").json()["partitions"]
    for part, shown_mean in zip(stats, means, strict=True):
        [(truth,)] = con.execute("SELECT avg(n) FROM sales WHERE region = ?",
                                 [part["name"].split("=", 1)[1]]).fetchall()
        assert part["columns"][0]["mean"] == pytest.approx(truth, rel=1e-9)
        assert shown_mean.replace(",", "") and float(shown_mean.replace(",", "")) == (
            pytest.approx(truth, rel=0.01)), (shown_mean, truth)
    assert _links_answer_200(page, api) > len(partitions)


def test_planted_alerts_show_and_open_their_columns(base_url: str, browser) -> None:
    """Every alert planted in the profile test's table (one column per kind) is on its page,
    as the API lists it, and its link opens that column."""
    api = httpx.Client(base_url=base_url, timeout=30)
    alerts = api.get("/api/tables/planted/profile").json()["alerts"]
    planted = {"unique", "constant", "all_null", "high_nulls", "skewed", "zeros", "nan",
               "outliers", "drift", "high_cardinality"}
    assert planted <= {a["kind"] for a in alerts}
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(30_000)
    page.goto(f"{base_url}/tables/planted")
    page.wait_for_selector('#overview[data-loaded="true"]')
    shown = page.locator("#alerts li").evaluate_all(
        "items => items.map(li => [li.dataset.kind, li.dataset.column || null])"
    )
    assert shown == [[a["kind"], a["column"]] for a in alerts]
    for kind in sorted(planted):
        first = next(a for a in alerts if a["kind"] == kind)
        page.goto(f"{base_url}/tables/planted")
        page.wait_for_selector('#overview[data-loaded="true"]')
        page.click(f'#alerts li[data-kind="{kind}"][data-column="{first["column"]}"] a')
        page.wait_for_url(f"**/tables/planted/columns/{first['column']}")
        assert first["column"] in page.inner_text("h1")


def test_column_page_partitions_are_paged_with_shades_of_all(
    base_url: str, browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table of many partitions pages the column page's partitions table (10,000
    partitions made a 3 MB page); the shades span every partition, so a row's shade is the
    same on its page as on one unpaged page; the pager's links answer 200 and walk on."""
    from lakestats.service import pages

    api = httpx.Client(base_url=base_url, timeout=30)
    names = [p["name"] for p in api.get("/api/tables/sales/partitions").json()["partitions"]]
    page = browser.new_page(viewport={"width": 1400, "height": 700})
    page.set_default_timeout(30_000)

    def rows() -> list[tuple[str, str | None]]:
        cells = page.locator("#partitions tbody tr")
        return [(cells.nth(i).locator("td").first.inner_text(),
                 cells.nth(i).locator("td").nth(1).get_attribute("style"))
                for i in range(cells.count())]

    page.goto(f"{base_url}/tables/sales/columns/n?scale=log")
    unpaged = rows()
    assert [name for name, _ in unpaged] == names and page.locator("#partition-pages").count() == 0
    monkeypatch.setattr(pages, "PARTITIONS_PER_PAGE", 2)
    page.goto(f"{base_url}/tables/sales/columns/n?scale=log")
    assert rows() == unpaged[:2]
    assert "partitions 1–2 of 3" in page.inner_text("#partition-pages")
    assert _links_answer_200(page, api) > 2
    page.locator("#partition-pages a[rel=next]").click()
    page.wait_for_url("**parts=2**")
    assert "scale=log" in page.url
    assert rows() == unpaged[2:]
    page.locator("#partition-pages a[rel=prev]").click()
    page.wait_for_url("**parts=1**")
    assert rows() == unpaged[:2]


@pytest.fixture(scope="module")
def guarded_url(tmp_path_factory: pytest.TempPathFactory, spark, sales):
    """A second server, with tokens: ``people`` (sensitive e-mails, cards, salaries) for
    the token ``people``, ``sales`` for none of the browser's."""
    import uvicorn

    from lakestats.service.config import TableConfig
    from lakestats.service.tokens import Token, digest, new_secret
    from tests.service.test_service_access import SENSITIVE, write_people

    root = write_people(tmp_path_factory.mktemp("guarded") / "people")
    ls.open_table(str(root)).analyze(spark=spark)
    secret = new_secret()
    tokens = [Token("people", digest(secret), frozenset({"people"}))]
    configs = [TableConfig("people", str(root), sensitive=SENSITIVE), sales]
    port = _free_port()
    app = create_app(configs, tokens=tokens)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning"))
    with serving(server):
        yield f"http://127.0.0.1:{port}", secret


def test_without_a_token_the_browser_gets_the_login_page(guarded_url, browser) -> None:
    url, _ = guarded_url
    page = browser.new_page()
    page.set_default_timeout(30_000)
    for path in ("/", "/tables/people", "/tables/people/columns/email"):
        response = page.goto(f"{url}{path}")
        assert response.status == 401, path
        assert page.locator("form#login input[name=token]").count() == 1
        assert "secret@" not in page.content()
    page.fill("#token", "lst_not-the-token")
    page.click("form#login button")
    page.wait_for_selector("#login-message")
    assert "not valid" in page.inner_text("#login-message")
    assert page.context.cookies() == []


def test_with_a_token_pages_click_through_without_sensitive_values(
    guarded_url, browser
) -> None:
    """Logged in through the form: the index lists the granted table only; its page, the
    cells and overview it loads, and every column page its links open show the counts of
    the sensitive columns and none of their values, while a column that is not sensitive
    shows its top values; every link answers 200 with the cookie; logging out ends it."""
    from tests.service.test_service_access import LEAKS, SENSITIVE

    url, secret = guarded_url
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(30_000)
    page.goto(f"{url}/tables/people")
    page.fill("#token", secret)
    page.click("form#login button")
    page.wait_for_url("**/tables/people")  # back where the login began
    [cookie] = page.context.cookies()
    assert cookie["name"] == "lakestats_token" and cookie["httpOnly"]
    page.goto(f"{url}/")
    assert page.locator("#tables tbody tr").count() == 1  # sales is not granted
    page.click("text=people")
    page.wait_for_url("**/tables/people")
    page.wait_for_selector('#columns-body[data-loaded="true"]')
    page.wait_for_selector('#overview[data-loaded="true"]')
    assert LEAKS.search(page.content()) is None
    for name in SENSITIVE:
        row = page.locator(f'#columns tr[data-column="{name}"]')
        assert row.locator("td.name .sensitive").count() == 1
        assert row.locator(".null-count").inner_text() == "0"
    city = page.locator('#columns tr[data-column="city"] td.top').inner_text()
    assert "Zyxville" in city  # values of the other columns do show
    api = httpx.Client(timeout=30, cookies={"lakestats_token": secret})
    hrefs = page.eval_on_selector_all(
        "#columns td.name a", "links => links.map(a => a.href)"
    )
    assert len(hrefs) == 6
    for i in range(len(hrefs)):
        page.goto(f"{url}/tables/people")
        page.locator("#columns td.name a").nth(i).click()
        page.wait_for_url("**/tables/people/columns/**")
        assert LEAKS.search(page.content()) is None, page.url
        name = page.url.rsplit("/", 1)[-1]
        if name in SENSITIVE:
            assert "sensitive" in page.inner_text("#sensitive")
            assert page.locator("#top-values").count() == 0
            assert page.locator("#histogram").count() == 0
        for href in page.eval_on_selector_all(
            "a[href]",
            "links => links.map(a => new URL(a.getAttribute('href'), document.baseURI).href)",
        ):
            answer = api.get(href)
            assert answer.status_code == 200, href
            assert LEAKS.search(answer.text) is None, href
    page.click("header form.logout button")
    page.wait_for_url("**/login")
    assert page.context.cookies() == []
    assert page.goto(f"{url}/tables/people").status == 401
