"""The optional parts of an installation, and one line naming the install a missing one needs.

The core (``pip install lakestats``) reads statistics: lookups, estimates, ``show``, the
Python API without Spark, on Parquet directories. Computing statistics, serving them and
opening the other table formats need the extras their libraries come in.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager

from lakestats.errors import MissingExtraError

LIBRARIES = {
    "pyspark": "spark",
    "pandas": "spark",
    "datasketches": "spark",
    "boto3": "spark",
    "grpc": "connect",
    "fastapi": "serve",
    "uvicorn": "serve",
    "jinja2": "serve",
    "fastapi_offline": "serve",
    "pyiceberg": "iceberg",
    "pyiceberg_core": "iceberg",
    "sqlalchemy": "iceberg",
    "deltalake": "delta",
    "hudi": "hudi",
    "pypaimon": "paimon",
}
"""A top-level module an extra installs -> the extra's name."""


def missing_extra(extra: str, what: str, module: str) -> MissingExtraError:
    return MissingExtraError(
        f"{what} needs the [{extra}] extra ({module} is not installed): "
        f"pip install 'lakestats[{extra}]'"
    )


def require(what: str, *modules: str) -> None:
    """Raise one line naming the install when any of ``modules`` is not installed."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise missing_extra(LIBRARIES[module], what, module)


@contextmanager
def imported(what: str) -> Iterator[None]:
    """Inside: an import of a library an extra installs, failing, becomes one line naming the
    extra (any other missing module stays the error it is)."""
    try:
        yield
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top not in LIBRARIES:
            raise
        raise missing_extra(LIBRARIES[top], what, top) from exc
