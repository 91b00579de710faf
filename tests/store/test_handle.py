"""The statistics root's handle: a picklable value naming the root and its S3 options."""

from __future__ import annotations

import os
import pickle

import pytest

from lakestats import fs
from lakestats.errors import CorruptStatisticsError
from lakestats.store.handle import StatisticsStore


def test_a_handle_is_a_normalized_picklable_value(tmp_path) -> None:
    options = fs.S3Options("http://127.0.0.1:9", "us-east-1", "k", "s")
    remote = StatisticsStore("s3://bucket/stats/", options)
    assert remote.uri == "s3://bucket/stats"
    assert pickle.loads(pickle.dumps(remote)) == remote  # what travels to executors
    local = StatisticsStore(f"file://{tmp_path}")
    assert local.uri == str(tmp_path) and str(local) == str(tmp_path)
    assert StatisticsStore(str(tmp_path)) == local
    assert remote.child("derived", "k") == StatisticsStore("s3://bucket/stats/derived/k", options)


def test_paths_under_the_root_and_files(tmp_path) -> None:
    store = StatisticsStore(str(tmp_path))
    uri = store.path("versions/v00000001.json")
    assert uri == os.path.join(str(tmp_path), "versions", "v00000001.json")
    with pytest.raises(CorruptStatisticsError):
        store.path("../elsewhere.json")  # a manifest never names a file outside its root
    assert not store.exists(uri)
    assert store.create_exclusive(uri, b"{}") and not store.create_exclusive(uri, b"[]")
    assert store.read_bytes(uri) == b"{}"
    assert [i.base_name for i in store.list_files(store.join("versions"))] == ["v00000001.json"]
    store.probe_writable()  # leaves nothing behind
    assert not any(p.name.startswith("probe-") for p in tmp_path.rglob("*"))
