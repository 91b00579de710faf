"""One handle per statistics root: the root's URI bound to its filesystem options.

A ``StatisticsStore`` is what the store layer, versions, the facade and the analyze
driver pass around instead of ``(root, s3)`` pairs (as pyiceberg binds a ``FileIO`` to
a table). It is a small frozen value (a URI and ``fs.S3Options``, both picklable), so a
Spark job carries it to executors, classic or Spark Connect, and every executor builds
the same filesystem from it without relying on the driver's environment.

Paths under the root are relative (``versions/v00000001.json``) and checked by
``layout.absolute``: one a damaged manifest names outside the root is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow.fs as pafs

from lakestats import fs
from lakestats.store import layout


@dataclass(frozen=True)
class StatisticsStore:
    """A statistics root (``uri``, normalized) and the S3 options its files are read and
    written with (``None``: the settings', for ``s3://`` roots)."""

    uri: str
    s3: fs.S3Options | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "uri", fs.normalize(self.uri))

    @classmethod
    def of(cls, root: StatisticsStore | str, s3: fs.S3Options | None = None) -> StatisticsStore:
        """``root`` itself when it is a handle, else a handle on the URI ``root``."""
        return root if isinstance(root, StatisticsStore) else cls(root, s3)

    def __str__(self) -> str:
        return self.uri

    # -- naming ---------------------------------------------------------------
    def path(self, relative: str) -> str:
        """The URI of ``relative`` (a path a manifest names) under the root; one outside
        the root is refused as damage (``layout.absolute``)."""
        return layout.absolute(self.uri, relative)

    def join(self, *parts: str) -> str:
        """The URI of ``parts`` under the root (names lakestats chose, unchecked)."""
        return fs.join(self.uri, *parts)

    def child(self, *parts: str) -> StatisticsStore:
        """The statistics store under ``parts`` (a derived store, a sample's scratch),
        with this one's options."""
        return StatisticsStore(self.join(*parts), self.s3)

    def resolve(self, uri: str) -> tuple[pafs.FileSystem, str]:
        """The filesystem and the path inside it of ``uri`` (a URI under this root)."""
        return fs.resolve(uri, self.s3)

    # -- files (URIs under the root, as ``path``/``join`` return them) ---------
    def file_info(self, uri: str) -> pafs.FileInfo:
        return fs.file_info(uri, self.s3)

    def exists(self, uri: str) -> bool:
        return fs.exists(uri, self.s3)

    def list_files(self, uri: str, recursive: bool = False) -> list:
        return fs.list_files(uri, self.s3, recursive=recursive)

    def read_bytes(self, uri: str) -> bytes:
        return fs.read_bytes(uri, self.s3)

    def write_bytes_atomic(self, uri: str, data: bytes) -> None:
        fs.write_bytes_atomic(uri, data, self.s3)

    def create_exclusive(self, uri: str, data: bytes) -> bool:
        return fs.create_exclusive(uri, data, self.s3)

    def open_output(self, uri: str):  # noqa: ANN201 - a binary stream
        return fs.open_output(uri, self.s3)

    def open_input_file(self, uri: str):  # noqa: ANN201 - a random-access file
        filesystem, path = self.resolve(uri)
        return filesystem.open_input_file(path)

    def delete_file(self, uri: str) -> None:
        fs.delete_file(uri, self.s3)

    def delete_dir(self, uri: str) -> None:
        fs.delete_dir(uri, self.s3)

    # -- the root itself -------------------------------------------------------
    def check_directory(self) -> None:
        """Fail with one line when the root exists but is a file."""
        fs.check_directory(self.uri, self.s3)

    def probe_writable(self) -> None:
        """Fail fast, with one line, when the root cannot be written."""
        import uuid

        probe = self.join("_staging", f"probe-{uuid.uuid4().hex}")
        self.write_bytes_atomic(probe, b"")
        self.delete_file(probe)
