"""The statistics root on an S3-compatible server (moto, started on 127.0.0.1)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats import cli, fs
from lakestats.store.handle import StatisticsStore

MOTO_SERVER = Path(__file__).parents[1] / "s3_server.py"
"""moto with S3's atomic conditional writes."""

pytestmark = [pytest.mark.s3, pytest.mark.spark]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def s3_endpoint():
    """moto's S3 server in its own process: some deltalake calls hold the GIL while they
    wait for S3, which would starve a server thread in this process."""
    import subprocess
    import sys
    import time
    import urllib.request

    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    options = fs.S3Options(
        endpoint_url=f"http://127.0.0.1:{port}",
        region="us-east-1",
        access_key="testing",
        secret_key="testing",
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(options.endpoint_url, timeout=1)
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                pytest.fail("moto server did not start within 30 s")
            time.sleep(0.2)
    import boto3

    boto3.client(
        "s3",
        endpoint_url=options.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    ).create_bucket(Bucket="lakestats-test")
    yield options
    server.terminate()
    server.wait(timeout=10)


@pytest.fixture()
def s3_env(s3_endpoint: fs.S3Options, monkeypatch: pytest.MonkeyPatch) -> fs.S3Options:
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint.endpoint_url)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    return s3_endpoint


def _table(root: Path) -> Path:
    rng = np.random.default_rng(1)
    for p in ("a", "b"):
        (root / f"k={p}").mkdir(parents=True)
        pq.write_table(
            pa.table({"x": rng.integers(0, 50, 500), "y": rng.normal(size=500)}),
            root / f"k={p}" / "part.parquet",
        )
    return root


def test_analyze_to_s3_and_look_up(spark, s3_env: fs.S3Options, tmp_path: Path, capsys) -> None:
    table = _table(tmp_path / "t")
    remote = "s3://lakestats-test/stats/t"
    assert cli.main(["analyze", str(table), "--stats-root", remote, "--bins", "20"]) == 0
    local = ls.open_table(str(table), stats_root=str(tmp_path / "local"))
    local.analyze(bins=20, spark=spark)
    capsys.readouterr()

    assert cli.main(["partitions", str(table), "--stats-root", remote, "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)["partitions"]
    assert [p["name"] for p in listing] == ["k=a", "k=b"]
    assert (
        cli.main(["show", str(table), "--stats-root", remote, "--partition", "k=a", "--json"]) == 0
    )
    shown = json.loads(capsys.readouterr().out)
    expected = local.statistics("k=a")
    assert [c["distinct_count"] for c in shown["columns"]] == [
        r["distinct_count"] for r in expected
    ]
    assert shown["columns"][0]["min"] == expected[0]["min"]

    remote_table = ls.open_table(str(table), stats_root=remote, s3=s3_env)
    assert [
        p.files["statistics"].startswith("s3://lakestats-test/stats/t/partitions/k=")
        for p in remote_table.partitions()
    ] == [True, True]
    top = remote_table.frequencies("x", "k=b", top=5)
    assert top.pairs == local.frequencies("x", "k=b", top=5).pairs
    assert remote_table.histogram("y", "k=b", 3, 9).bins == local.histogram("y", "k=b", 3, 9).bins
    filesystem, path = fs.resolve(remote, s3_env)
    assert filesystem.get_file_info(f"{path}/latest.json").size > 0


def _upload(endpoint: fs.S3Options, local: Path, prefix: str) -> str:
    """Copy a table directory into the moto bucket; returns its s3:// URI."""
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=endpoint.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    for path in local.rglob("*"):
        if path.is_file():
            key = f"{prefix}/{path.relative_to(local).as_posix()}"
            client.upload_file(str(path), "lakestats-test", key)
    return f"s3://lakestats-test/{prefix}"


@pytest.mark.parametrize(
    "name",
    [
        "delta/delta-2.2.0-partitioned-types",
        "delta/table-with-dv-small",
        "hudi/v6_trips_8i1u",
        "paimon/warehouse/default.db/test_pk_vector_golden",
    ],
)
def test_tables_on_s3_read_as_their_formats_read_them_locally(
    spark,
    s3_env: fs.S3Options,
    fixtures_dir: Path,
    tmp_path: Path,
    capsys,
    name: str,
) -> None:
    """The format readers (delta-rs, hudi-rs, pypaimon) and the fast path work on s3://
    tables: statistics equal those of the same table analyzed from the local fixture."""
    local = fixtures_dir / name
    remote = _upload(s3_env, local, f"tables/{name.replace('/', '_')}")
    stats = f"s3://lakestats-test/stats/{name.replace('/', '_')}"
    assert cli.main(["analyze", remote, "--stats-root", stats]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert cli.main(["show", remote, "--stats-root", stats, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    here = str(tmp_path / "local")
    assert cli.main(["analyze", str(local), "--stats-root", here]) == 0
    capsys.readouterr()
    assert cli.main(["show", str(local), "--stats-root", here, "--json"]) == 0
    expected = json.loads(capsys.readouterr().out)
    assert shown["row_count"] == expected["row_count"] > 0
    for mine, theirs in zip(shown["columns"], expected["columns"], strict=True):
        assert mine["name"] == theirs["name"]
        for key in ("row_count", "null_count", "min", "max", "distinct_count"):
            assert mine.get(key) == theirs.get(key), (name, mine["name"], key)


def test_exclusive_create_on_s3_has_one_winner(s3_endpoint: fs.S3Options) -> None:
    """Version manifests are created with a conditional write: of writers racing for one
    key exactly one succeeds, and the stored bytes are the winner's."""
    from concurrent.futures import ThreadPoolExecutor

    uri = "s3://lakestats-test/race/versions/v00000001.json"
    payloads = [f"writer {i}".encode() for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        store = StatisticsStore("s3://lakestats-test/race", s3_endpoint)
        won = list(pool.map(lambda d: store.create_exclusive(uri, d), payloads))
    assert won.count(True) == 1
    assert fs.read_bytes(uri, s3_endpoint) == payloads[won.index(True)]
    assert store.create_exclusive(uri, b"late") is False
