"""One filesystem layer: every path is a URI resolved through ``pyarrow.fs``.

Local paths and ``file://`` URIs go to the local filesystem, ``s3://`` to
``S3FileSystem``. S3 options come from ``S3Options`` (serializable, so executors
build the same filesystem without relying on the driver's environment) and default
to the standard AWS variables plus ``AWS_ENDPOINT_URL`` for S3-compatible servers.

Every failure of the store (refused connection, full disk, a root that is a file) is
one ``StorageError`` line; S3 requests have bounded timeouts and retries, so an
endpoint that refuses or never answers fails in seconds, not minutes.

The S3 options each format library gets (pyarrow, object_store, pyiceberg) are made here,
so one set of limits and one error line hold for all of them. A statistics root writes its
own files through its handle (``store/handle.py``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import posixpath
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from urllib.parse import urlparse

import pyarrow.fs as pafs

from lakestats import config
from lakestats.errors import StorageError


@dataclass(frozen=True)
class S3Options:
    """Connection settings for ``s3://`` URIs."""

    endpoint_url: str | None = None
    region: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    # None: the settings' (``s3.connect_timeout``, ``s3.request_timeout``, ``s3.attempts``)
    connect_timeout: float | None = None
    request_timeout: float | None = None
    attempts: int | None = None

    @classmethod
    def from_env(cls) -> S3Options:
        """The S3 settings (``lakestats.config``: the ``AWS_*`` variables, the config
        file's ``[s3]`` table)."""
        chosen = config.settings()
        return cls(
            endpoint_url=chosen.s3_endpoint_url,
            region=chosen.s3_region,
            access_key=chosen.s3_access_key,
            secret_key=chosen.s3_secret_key,
        ).with_limits()

    def with_limits(self, analyze: bool = False) -> S3Options:
        """These options with every timeout set (the settings' for those not given): what
        travels to executors, whose environment is not the driver's. ``analyze``: the
        longer request timeout of a Spark job."""
        chosen = config.settings()
        request = chosen.s3_analyze_request_timeout if analyze else chosen.s3_request_timeout
        return replace(
            self,
            connect_timeout=self.connect_timeout or chosen.s3_connect_timeout,
            request_timeout=request if analyze else self.request_timeout or request,
            attempts=self.attempts or chosen.s3_attempts,
        )

    def describe(self) -> str:
        """Which endpoint and limits, for an error that says who did not answer."""
        where = self.endpoint_url or f"AWS S3 ({self.region or 'default region'})"
        limits = self.with_limits() if None in (
            self.connect_timeout, self.request_timeout, self.attempts
        ) else self
        return (
            f"{where} (connect timeout {limits.connect_timeout:g} s, request timeout "
            f"{limits.request_timeout:g} s, {limits.attempts} attempts)"
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
    # the same limits as lakestats' own client (object_store's defaults: 30 s a request,
    # 10 retries for up to 3 minutes, what made a silent endpoint hang a command)
    limits = s3.with_limits()  # keeps the limits given, fills the others from the settings
    whole = limits.attempts * (limits.request_timeout + limits.connect_timeout)
    options["connect_timeout"] = f"{math.ceil(limits.connect_timeout)}s"  # humantime: whole
    options["timeout"] = f"{math.ceil(limits.request_timeout)}s"
    options["max_retries"] = str(max(0, limits.attempts - 1))
    options["retry_timeout"] = f"{math.ceil(whole)}s"
    return options


@lru_cache(maxsize=16)
def iceberg_io_properties(s3: S3Options | None) -> dict[str, str]:
    """pyiceberg FileIO properties for a table opened by its path on an S3-compatible store:
    its endpoint, credentials and lakestats' limits (pyiceberg's own client knew neither)."""
    if s3 is None:
        return {}
    limits = s3.with_limits()
    pairs = (
        ("s3.endpoint", s3.endpoint_url),
        ("s3.region", s3.region),
        ("s3.access-key-id", s3.access_key),
        ("s3.secret-access-key", s3.secret_key),
        ("s3.connect-timeout", f"{limits.connect_timeout:g}"),
        ("s3.request-timeout", f"{limits.request_timeout:g}"),
    )
    return {k: v for k, v in pairs if v}


@lru_cache(maxsize=16)
def _s3(options: S3Options) -> pafs.FileSystem:
    """One filesystem per set of options (building one costs ~1 ms, and a lookup resolves
    several paths); pyarrow's S3 filesystem is safe to share between threads."""
    limits = options.with_limits() if options.request_timeout is None else options
    kwargs: dict[str, object] = {
        "connect_timeout": limits.connect_timeout,
        "request_timeout": limits.request_timeout,
        "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=limits.attempts),
    }
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


def _unreachable(uri: str, exc: OSError, s3: S3Options | None = None) -> StorageError:
    """One line for a store that cannot be reached or read (S3 errors are multi-line);
    one that did not answer in time is named with its limits."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if not is_remote(uri):
        return StorageError(f"cannot read {uri}: {text[:300]}; check the path and its permissions")
    options = s3 or S3Options.from_env()
    if _timed_out(text):
        return StorageError(
            f"cannot read {uri}: the S3 endpoint {options.describe()} did not answer; "
            "check the endpoint (AWS_ENDPOINT_URL) and network, or raise "
            "s3.request_timeout / s3.attempts (LAKESTATS_S3_REQUEST_TIMEOUT)"
        )
    return StorageError(
        f"cannot read {uri} from {options.endpoint_url or 'AWS S3'}: {text[:300]}; "
        "check the endpoint (AWS_ENDPOINT_URL), credentials and network"
    )


def _timed_out(text: str) -> bool:
    lowered = text.lower()
    return "curlcode: 28" in lowered or "timeout" in lowered or "timed out" in lowered


def file_info(uri: str, s3: S3Options | None = None) -> pafs.FileInfo:
    filesystem, path = resolve(uri, s3)
    try:
        return filesystem.get_file_info(path)
    except OSError as exc:
        raise _unreachable(uri, exc, s3) from exc


def exists(uri: str, s3: S3Options | None = None) -> bool:
    return file_info(uri, s3).type != pafs.FileType.NotFound


def is_dir(uri: str, s3: S3Options | None = None) -> bool:
    return file_info(uri, s3).type == pafs.FileType.Directory


def list_files(uri: str, s3: S3Options | None = None, recursive: bool = False) -> list:
    """The entries under directory ``uri`` (none when it does not exist)."""
    filesystem, path = resolve(uri, s3)
    selector = pafs.FileSelector(path, recursive=recursive, allow_not_found=True)
    try:
        return filesystem.get_file_info(selector)
    except NotADirectoryError:
        return []  # a file where a directory was expected: check_directory says so
    except FileNotFoundError:
        return []  # created or removed by a concurrent writer while it was listed
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ENOENT) or "not a directory" in str(exc).lower():
            return []
        raise _unreachable(uri, exc, s3) from exc


def cannot_write(uri: str, exc: OSError, s3: S3Options | None = None) -> StorageError:
    """One line for a write that failed; on S3 (its retries spent) naming the endpoint and
    its limits, since a store that fails requests, not the root, is then the usual cause."""
    if exc.errno == errno.ENOSPC:
        return StorageError(
            f"cannot write {uri}: no space left on device; free space on the statistics "
            "root (nothing was published, the previous version stands) and analyze again"
        )
    text = exc.strerror or " ".join(str(exc).split()) or type(exc).__name__
    if is_remote(uri):
        return s3_write_failed(uri, text, s3 or S3Options.from_env())
    return StorageError(
        f"cannot write {uri}: {text[:300]}; check that the statistics root is "
        "writable or pass another one with --stats-root"
    )


def s3_write_failed(uri: str, reason: str, s3: S3Options) -> StorageError:
    """A write the S3 endpoint failed after every attempt (throttled, an internal error, the
    connection lost): an analyze that fails so publishes nothing."""
    return StorageError(
        f"cannot write {uri}: {reason[:300]}; the S3 endpoint {s3.describe()} failed it "
        "every time: analyze again once it answers (a failed analyze publishes nothing; the "
        "previous statistics version stands), or raise s3.attempts (LAKESTATS_S3_ATTEMPTS)"
    )


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
        if exc.errno == errno.EISDIR or "is a directory" in str(exc).lower():
            raise StorageError(f"cannot read {uri}: it is a directory, not a file") from exc
        raise _unreachable(uri, exc, s3) from exc


def delete_file(uri: str, s3: S3Options | None = None) -> None:
    """Delete one file (``FileNotFoundError`` when there is none)."""
    filesystem, path = resolve(uri, s3)
    filesystem.delete_file(path)


def delete_dir(uri: str, s3: S3Options | None = None) -> None:
    fs, path = resolve(uri, s3)
    with contextlib.suppress(FileNotFoundError, OSError):
        fs.delete_dir(path)
