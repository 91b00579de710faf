"""One filesystem layer: every path is a URI resolved through ``pyarrow.fs``.

Local paths and ``file://`` URIs go to the local filesystem, ``s3://`` to
``S3FileSystem``. S3 options come from ``S3Options`` (serializable, so executors
build the same filesystem without relying on the driver's environment) and default
to the standard AWS variables plus ``AWS_ENDPOINT_URL`` for S3-compatible servers.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import uuid
from dataclasses import asdict, dataclass
from functools import lru_cache
from urllib.parse import urlparse

import pyarrow.fs as pafs

from lakestats.errors import StorageError


@dataclass(frozen=True)
class S3Options:
    """Connection settings for ``s3://`` URIs."""

    endpoint_url: str | None = None
    region: str | None = None
    access_key: str | None = None
    secret_key: str | None = None

    @classmethod
    def from_env(cls) -> S3Options:
        return cls(
            endpoint_url=(
                os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
            ),
            region=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"),
            access_key=os.environ.get("AWS_ACCESS_KEY_ID"),
            secret_key=os.environ.get("AWS_SECRET_ACCESS_KEY"),
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> S3Options:
        return cls(**json.loads(text))


@lru_cache(maxsize=16)
def object_store_options(s3: S3Options | None) -> dict[str, str]:
    """Storage options of the Rust ``object_store`` crate (delta-rs, hudi-rs) for an
    S3-compatible store (empty for local tables)."""
    if s3 is None:
        return {}
    options = {"AWS_ALLOW_HTTP": "true"} if (s3.endpoint_url or "").startswith("http:") else {}
    for key, value in (
        ("AWS_ENDPOINT_URL", s3.endpoint_url),
        ("AWS_REGION", s3.region),
        ("AWS_ACCESS_KEY_ID", s3.access_key),
        ("AWS_SECRET_ACCESS_KEY", s3.secret_key),
    ):
        if value:
            options[key] = value
    return options


def _s3(options: S3Options) -> pafs.FileSystem:
    kwargs: dict[str, object] = {}
    if options.endpoint_url:
        parsed = urlparse(options.endpoint_url)
        kwargs["endpoint_override"] = parsed.netloc or parsed.path
        kwargs["scheme"] = parsed.scheme or "https"
    if options.region:
        kwargs["region"] = options.region
    if options.access_key:
        kwargs["access_key"] = options.access_key
        kwargs["secret_key"] = options.secret_key
    return pafs.S3FileSystem(**kwargs)


_LOCAL = pafs.LocalFileSystem()


def is_remote(uri: str) -> bool:
    return "://" in uri and not uri.startswith("file://")


def normalize(uri: str) -> str:
    """Make a URI canonical: local paths absolute, schemes kept."""
    if uri.startswith("file://"):
        return os.path.abspath(uri[len("file://") :])
    if "://" in uri:
        return uri.rstrip("/")
    return os.path.abspath(os.path.expanduser(uri))


def resolve(uri: str, s3: S3Options | None = None) -> tuple[pafs.FileSystem, str]:
    """Return the filesystem and the path inside it for ``uri``."""
    uri = normalize(uri)
    if "://" not in uri:
        return _LOCAL, uri
    scheme, _, rest = uri.partition("://")
    if scheme in ("s3", "s3a"):
        return _s3(s3 or S3Options.from_env()), rest
    raise StorageError(
        f"unsupported URI scheme {scheme!r} in {uri!r}: use a local path or s3://bucket/key"
    )


def join(base: str, *parts: str) -> str:
    if "://" in base:
        scheme, _, rest = base.partition("://")
        return f"{scheme}://{posixpath.join(rest, *parts)}"
    return os.path.join(base, *parts)


def exists(uri: str, s3: S3Options | None = None) -> bool:
    fs, path = resolve(uri, s3)
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def is_dir(uri: str, s3: S3Options | None = None) -> bool:
    fs, path = resolve(uri, s3)
    return fs.get_file_info(path).type == pafs.FileType.Directory


def read_bytes(uri: str, s3: S3Options | None = None) -> bytes:
    fs, path = resolve(uri, s3)
    try:
        with fs.open_input_stream(path) as stream:
            return stream.read()
    except FileNotFoundError:
        raise
    except OSError as exc:
        if "not found" in str(exc).lower() or "does not exist" in str(exc).lower():
            raise FileNotFoundError(uri) from exc
        raise StorageError(f"cannot read {uri}: {exc}") from exc


def write_bytes_atomic(uri: str, data: bytes, s3: S3Options | None = None) -> None:
    """Write ``data`` so readers see either nothing or all of it.

    Object stores make a single PUT atomic; on a local disk we write a temporary
    sibling and rename it over the target.
    """
    fs, path = resolve(uri, s3)
    try:
        parent = posixpath.dirname(path) if "://" in normalize(uri) else os.path.dirname(path)
        fs.create_dir(parent, recursive=True)
        if isinstance(fs, pafs.LocalFileSystem):
            tmp = f"{path}.{uuid.uuid4().hex}.tmp"
            with fs.open_output_stream(tmp) as out:
                out.write(data)
            os.replace(tmp, path)
        else:
            with fs.open_output_stream(path) as out:
                out.write(data)
    except OSError as exc:
        raise StorageError(
            f"cannot write {uri}: {exc.strerror or exc}; check that the statistics root is "
            "writable or pass another one with --stats-root"
        ) from exc


def create_exclusive(uri: str, data: bytes, s3: S3Options | None = None) -> bool:
    """Create ``uri`` with ``data`` unless it exists; False when another writer was first.

    Local disks make this atomic (a hard link, which never replaces); S3 too, with a
    conditional write (``If-None-Match: *``, through boto3 since pyarrow cannot send it).
    Stores without conditional writes get put-if-absent followed by a read-back that
    detects a concurrent writer after the fact.
    """
    filesystem, path = resolve(uri, s3)
    if isinstance(filesystem, pafs.LocalFileSystem):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "wb") as out:
            out.write(data)
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)
    if uri.startswith("s3://"):
        created = _s3_put_if_absent(path, data, s3 or S3Options.from_env())
        if created is not None:
            return created
    if exists(uri, s3):
        return False
    write_bytes_atomic(uri, data, s3)
    return read_bytes(uri, s3) == data


def _s3_put_if_absent(path: str, data: bytes, s3: S3Options) -> bool | None:
    """S3 conditional write (``If-None-Match: *``): True when created, False when the key
    exists, None when the store does not support it (then the caller falls back)."""
    import boto3
    from botocore.exceptions import ClientError

    bucket, _, key = path.partition("/")
    client = boto3.client(
        "s3",
        endpoint_url=s3.endpoint_url,
        region_name=s3.region,
        aws_access_key_id=s3.access_key,
        aws_secret_access_key=s3.secret_key,
    )
    try:
        client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
        return True
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
        raise StorageError(f"cannot create {path} on S3: {error.get('Message', exc)}") from exc


def delete_dir(uri: str, s3: S3Options | None = None) -> None:
    fs, path = resolve(uri, s3)
    with contextlib.suppress(FileNotFoundError, OSError):
        fs.delete_dir(path)
