"""An S3 statistics root whose endpoint fails some requests mid-run (``tests/s3_server.py``'s
faults: ``503 SlowDown``, ``500 InternalError``, connection resets before and after the store
took the request). Transient faults on the partitions' writes, the table level's and the
version's commit are retried within ``s3.attempts`` and the analyze publishes what an analyze
without faults does; a fault that persists ends the analyze with one line and a non-zero
exit, nothing published (the previous version stands, whole and readable)."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakestats import cli, fs
from lakestats.store import manifest
from lakestats.store.handle import StatisticsStore
from lakestats.store.reader import StatisticsReader
from tests.spark_servers import moto_server

pytestmark = [pytest.mark.s3, pytest.mark.spark, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[fs.S3Options]:
    with moto_server(tmp_path_factory.mktemp("moto")) as options:
        yield options


@pytest.fixture()
def s3(endpoint: fs.S3Options, monkeypatch: pytest.MonkeyPatch) -> Iterator[fs.S3Options]:
    for name, value in (("AWS_ENDPOINT_URL", endpoint.endpoint_url), ("AWS_REGION", "us-east-1"),
                        ("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                        ("LAKESTATS_S3_ATTEMPTS", "3")):
        monkeypatch.setenv(name, value or "")
    yield endpoint
    _faults(endpoint, [])


def _faults(endpoint: fs.S3Options, rules: list[dict]) -> list[dict]:
    """Set the server's fault rules; the previous rules, with how many requests each failed."""
    before = json.loads(urllib.request.urlopen(f"{endpoint.endpoint_url}/_faults", timeout=10)
                        .read())["rules"]
    request = urllib.request.Request(f"{endpoint.endpoint_url}/_faults", method="POST",
                                     data=json.dumps({"rules": rules}).encode())
    urllib.request.urlopen(request, timeout=10).read()
    return before


def _table(root: Path) -> Path:
    rng = np.random.default_rng(3)
    for p in ("a", "b", "c"):
        (root / f"k={p}").mkdir(parents=True)
        pq.write_table(pa.table({"x": rng.integers(0, 90, 800), "y": rng.normal(size=800)}),
                       root / f"k={p}" / "part.parquet")
    return root


def _statistics(store: StatisticsStore) -> list[dict]:
    reader = StatisticsReader(store)
    return [reader.column_statistics(p.name) for p in reader.version.partitions] + [
        reader.column_statistics(None)]


def test_transient_faults_are_retried_and_the_statistics_are_right(
    spark, s3: fs.S3Options, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    table = _table(tmp_path / "t")
    remote = "s3://lakestats-test/stats/transient"
    store = StatisticsStore(remote, s3)
    assert cli.main(["analyze", str(table), "--stats-root", remote]) == 0
    partitions, table_level = "/transient/partitions/", "/transient/table/"
    rules = [  # no request fails more than twice: the third of three attempts goes through
        {"method": "PUT", "contains": [partitions, "/statistics.parquet"], "fault": "503",
         "times": 2},
        # a partition's frequency rows, handed to the reduction (the parts hold them)
        {"method": "PUT", "contains": ["/transient/_staging/", "/frequencies.arrow"],
         "fault": "reset", "times": 2},
        {"method": "PUT", "contains": [table_level, ".parquet"], "fault": "500", "times": 2},
        # the commit: reset before the store took it, then after (its answer lost: the retry
        # finds the version there, its own, and knows it for its own)
        {"method": "PUT", "contains": "/transient/versions/", "fault": "reset", "times": 1},
        {"method": "PUT", "contains": "/transient/versions/", "fault": "reset-after", "times": 1},
    ]
    _faults(s3, rules)
    code = cli.main(["analyze", str(table), "--stats-root", remote, "--bins", "40"])
    hits = _faults(s3, [])
    assert code == 0, capsys.readouterr().err
    assert [r["hits"] for r in hits] == [2, 2, 2, 1, 1], hits
    assert manifest.version_numbers(store) == [1, 2]  # one version, not two
    local = tmp_path / "local"
    assert cli.main(["analyze", str(table), "--stats-root", str(local), "--bins", "40"]) == 0
    ours, theirs = _statistics(store), _statistics(StatisticsStore(str(local)))
    assert ours[:-1] == theirs[:-1]  # every partition's statistics
    # the table level's float percentiles are estimates merged in the order tasks finish
    # (two analyses without faults differ there too): the rest is equal
    estimated = {"p01", "p05", "p25", "p50", "p75", "p95", "p99"}
    for x, y in zip(ours[-1], theirs[-1], strict=True):
        assert {k: v for k, v in x.items() if k not in estimated} == pytest.approx(
            {k: v for k, v in y.items() if k not in estimated}), x["column"]


@pytest.mark.parametrize(
    ("where", "fault"),
    [("/versions/", "503"), ("/partitions/", "500"), ("/table/", "reset")],
)
def test_a_persistent_fault_is_one_line_and_publishes_nothing(
    spark, s3: fs.S3Options, tmp_path: Path, capsys: pytest.CaptureFixture, where: str,
    fault: str,
) -> None:
    table = _table(tmp_path / "t")
    name = f"persistent-{fault}"
    remote = f"s3://lakestats-test/stats/{name}"
    store = StatisticsStore(remote, s3)
    assert cli.main(["analyze", str(table), "--stats-root", remote]) == 0
    before = _statistics(store)
    capsys.readouterr()
    _faults(s3, [{"method": "PUT", "contains": f"/{name}{where}", "fault": fault, "times": -1}])
    code = cli.main(["analyze", str(table), "--stats-root", remote, "--bins", "40"])
    hits = _faults(s3, [])
    err = capsys.readouterr().err
    assert code != 0 and hits[0]["hits"] >= 3, (code, hits)
    [line] = err.strip().splitlines()
    assert line.startswith("lakestats: error: ") and "Traceback" not in err, err
    assert f"cannot write s3://lakestats-test/stats/{name}/" in line, line
    assert f"the S3 endpoint {s3.endpoint_url}" in line and "3 attempts" in line, line
    # nothing published: the previous version stands, whole and readable
    assert manifest.version_numbers(store) == [1]
    assert _statistics(store) == before
    assert cli.main(["show", str(table), "--stats-root", remote, "--json"]) == 0
