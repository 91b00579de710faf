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

pytestmark = [pytest.mark.s3, pytest.mark.spark]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def s3_endpoint():  # noqa: ANN201
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    options = fs.S3Options(
        endpoint_url=f"http://127.0.0.1:{port}",
        region="us-east-1",
        access_key="testing",
        secret_key="testing",
    )
    import boto3

    boto3.client(
        "s3",
        endpoint_url=options.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    ).create_bucket(Bucket="lakestats-test")
    yield options
    server.stop()


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


def test_analyze_to_s3_and_look_up(spark, s3_env: fs.S3Options, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    table = _table(tmp_path / "t")
    remote = "s3://lakestats-test/stats/t"
    assert cli.main(["analyze", str(table), "--stats-root", remote, "--bins", "20"]) == 0
    local = ls.open_table(str(table), stats_root=str(tmp_path / "local"))
    local.analyze(bins=20, spark=spark)
    capsys.readouterr()

    assert cli.main(["partitions", str(table), "--stats-root", remote, "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert [
        p["statistics_path"].startswith("s3://lakestats-test/stats/t/partitions/k=")
        for p in listing
    ] == [True, True]
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
    assert remote_table.frequencies("x", "k=b", top=5) == local.frequencies("x", "k=b", top=5)
    assert remote_table.histogram("y", "k=b", 3, 9) == local.histogram("y", "k=b", 3, 9)
    filesystem, path = fs.resolve(remote, s3_env)
    assert filesystem.get_file_info(f"{path}/latest.json").size > 0
