"""One handle per statistics root: the root's URI bound to its filesystem options.

A ``StatisticsStore`` is what the store layer, versions, the facade and the analyze
driver pass around instead of ``(root, s3)`` pairs (as pyiceberg binds a ``FileIO`` to
a table). It is a small frozen value (a URI and ``fs.S3Options``, both picklable), so a
Spark job carries it to executors, classic or Spark Connect, and every executor builds
the same filesystem from it without relying on the driver's environment.

Paths under the root are relative (``versions/v00000001.json``) and checked by
``layout.absolute``: one a damaged manifest names outside the root is refused. The handle
writes its files itself; reads and listings share ``lakestats.fs`` with the table formats.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import uuid
from dataclasses import dataclass

import pyarrow.fs as pafs

from lakestats import fs
from lakestats.errors import StorageError
from lakestats.store import layout


@dataclass(frozen=True)
class StatisticsStore:
    """A statistics root (``uri``, normalized) and the S3 options its files are read and
    written with (``None``: the settings', for ``s3://`` roots)."""

    uri: str
    s3: fs.S3Options | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "uri", fs.normalize(self.uri))

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

    def open_output(self, uri: str):  # noqa: ANN201 - a binary stream
        """A writable binary stream for ``uri`` (parents created). Local files are opened
        with Python's ``open`` (one place tests can make a disk full)."""
        filesystem, path = self.resolve(uri)
        if isinstance(filesystem, pafs.LocalFileSystem):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            return _open_local(path)
        filesystem.create_dir(posixpath.dirname(path), recursive=True)
        return filesystem.open_output_stream(path)

    def write_bytes_atomic(self, uri: str, data: bytes) -> None:
        """Write ``data`` so readers see either nothing or all of it: one PUT on an object
        store; on a local disk a temporary sibling renamed over the target."""
        _, path = self.resolve(uri)
        if fs.is_remote(uri):
            try:
                with self.open_output(uri) as out:
                    out.write(data)
            except OSError as exc:
                raise fs.cannot_write(uri, exc, self.s3) from exc
            return
        tmp = f"{path}.{uuid.uuid4().hex}.tmp"
        try:
            with self.open_output(tmp) as out:
                out.write(data)
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)  # a full disk must not leave a partial temporary file behind
            raise fs.cannot_write(uri, exc, self.s3) from exc

    def create_exclusive(self, uri: str, data: bytes) -> bool:
        """Create ``uri`` with ``data`` unless it exists; False when another writer was
        first (the commit protocol's one primitive).

        Local disks make this atomic (a hard link, which never replaces); S3 too, with a
        conditional write (``If-None-Match: *``, through boto3 since pyarrow cannot send it).
        Stores without conditional writes get put-if-absent followed by a read-back that
        detects a concurrent writer after the fact."""
        _, path = self.resolve(uri)
        if not fs.is_remote(uri):
            tmp = f"{path}.{uuid.uuid4().hex}.tmp"
            try:
                with self.open_output(tmp) as out:
                    out.write(data)
                os.link(tmp, path)
                return True
            except FileExistsError:
                return False
            except OSError as exc:
                raise fs.cannot_write(uri, exc, self.s3) from exc
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        if uri.startswith("s3://"):
            created = _s3_put_if_absent(path, data, self.s3 or fs.S3Options.from_env())
            if created is not None:
                return created
        if self.exists(uri):
            return False
        self.write_bytes_atomic(uri, data)
        return self.read_bytes(uri) == data

    def open_input_file(self, uri: str):  # noqa: ANN201 - a random-access file
        filesystem, path = self.resolve(uri)
        return filesystem.open_input_file(path)

    def delete_file(self, uri: str) -> None:
        fs.delete_file(uri, self.s3)

    def delete_dir(self, uri: str) -> None:
        fs.delete_dir(uri, self.s3)

    # -- the root itself -------------------------------------------------------
    def check_directory(self) -> None:
        """Fail with one line when the root (or a local root's parent) exists but is a
        file: a statistics root is a directory or does not exist yet."""
        local = not fs.is_remote(self.uri)
        parent = os.path.normpath(os.path.join(self.uri, "..")) if local else None
        for candidate in filter(None, (self.uri, parent)):
            if self.file_info(candidate).type == pafs.FileType.File:
                raise StorageError(
                    f"statistics root {self.uri} is not a directory ({candidate} is a file): "
                    "pass the directory `lakestats analyze` wrote to (--stats-root)"
                )

    def probe_writable(self) -> None:
        """Fail fast, with one line, when the root cannot be written."""
        import uuid

        probe = self.join("_staging", f"probe-{uuid.uuid4().hex}")
        self.write_bytes_atomic(probe, b"")
        self.delete_file(probe)


def _open_local(path: str):  # noqa: ANN202 - a binary file
    return open(path, "wb")


def _s3_put_if_absent(path: str, data: bytes, s3: fs.S3Options) -> bool | None:
    """S3 conditional write (``If-None-Match: *``): True when created, False when the key
    exists, None when the store does not support it (then the caller falls back)."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, _, key = path.partition("/")
    limits = s3.with_limits() if s3.request_timeout is None else s3
    client = boto3.client(
        "s3",
        endpoint_url=s3.endpoint_url,
        region_name=s3.region,
        aws_access_key_id=s3.access_key,
        aws_secret_access_key=s3.secret_key,
        config=Config(
            connect_timeout=limits.connect_timeout,
            read_timeout=limits.request_timeout,
            retries={"max_attempts": limits.attempts, "mode": "standard"},
        ),
    )
    try:
        client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
        return True
    except BotoCoreError as exc:  # no connection, timeouts
        raise StorageError(
            f"cannot write s3://{path}: {exc}; the S3 endpoint {limits.describe()}: check "
            "the endpoint (AWS_ENDPOINT_URL), credentials and network"
        ) from exc
    except ClientError as exc:
        error = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if error.get("Code") in ("PreconditionFailed", "ConditionalRequestConflict") or status in (
            409,
            412,
        ):
            return False
        if error.get("Code") == "NotImplemented" or status == 501:
            return None
        reason = f"{error.get('Message') or exc} ({error.get('Code') or status})"
        raise fs.s3_write_failed(f"s3://{path}", reason, limits) from exc
