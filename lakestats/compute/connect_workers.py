"""Spark Connect: whether a session is one, whether its server's Python workers can run
lakestats' job, and shipping it.

Under Spark Connect the job's tasks are lakestats functions, unpickled by reference in the
server's Python workers: a server whose workers lack lakestats fails the first task with
``ModuleNotFoundError: No module named 'lakestats'``, which a stock server reports to the
client as ``SQLSTATE: 38000`` alone (its text cannot be relied upon). So ``check_workers``
asks the workers before the job, with a probe pickled by value (it imports nothing of
lakestats to be unpickled) that returns what importing lakestats gives, and says in one
line what to install where, or which option ships it; ``explain_failure`` asks again when
a job fails all the same. ``ship`` sends this client's lakestats package with
the session (``spark.addArtifacts(zip, pyfile=True)``); the workers still need lakestats'
dependencies (docs/deploy.md).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from pathlib import Path

from pyspark.sql import SparkSession

from lakestats.config import installed_version
from lakestats.errors import InvalidArgumentError, LakestatsError

PACKAGE = Path(__file__).resolve().parents[1]  # this client's lakestats package


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (a client of a remote Spark server)."""
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # the Connect client's dependencies (grpcio, ...) are not installed
        return False
    return isinstance(spark, ConnectSession)


_PROBE_SOURCE = '''
def probe(_):
    import sys
    try:
        import lakestats
        return "ok " + getattr(lakestats, "__version__", "?")
    except Exception as exc:
        return f"{type(exc).__name__}: {exc} (worker Python {sys.executable})"
'''


def _probe():  # noqa: ANN202 - a function the workers unpickle by value
    """``probe`` defined in a module that does not exist, so that cloudpickle sends its
    code (by value), not a reference the workers would have to import from lakestats."""
    namespace: dict[str, object] = {"__name__": "lakestats_worker_probe"}
    exec(compile(_PROBE_SOURCE, "<lakestats worker probe>", "exec"), namespace)
    return namespace["probe"]


def workers_lakestats(spark: SparkSession) -> str:
    """What the session's Python workers answer when they import lakestats: ``ok
    <version>``, or the error (one line)."""
    from pyspark.sql import functions as F

    probe = F.udf(_probe(), "string")
    [row] = spark.range(1).select(probe(F.col("id")).alias("answer")).collect()
    return str(row["answer"])


def check_workers(spark: SparkSession) -> None:
    """Before a job on a Spark Connect session: raise the one-line error of
    ``explain_failure`` when the server's Python workers cannot import lakestats (asked
    once per session; a probe that cannot run leaves the job to say what is wrong)."""
    if not is_connect(spark):
        return
    key = id(spark)
    found = _CHECKED.get(key)
    if found is None or found[0] is not spark:
        try:
            answer = workers_lakestats(spark)
        except Exception:  # noqa: BLE001 - the job's own error (or explain_failure) says
            return
        found = _CHECKED[key] = (spark, answer)
    if not found[1].startswith("ok"):
        del _CHECKED[key]  # asked again next time: lakestats may be installed meanwhile
        raise _missing(found[1])


_CHECKED: dict[int, tuple[SparkSession, str]] = {}


def explain_failure(spark: SparkSession, failure: LakestatsError) -> LakestatsError:
    """``failure`` of a job on ``spark``, or, when the session is Spark Connect and its
    workers cannot import lakestats, one line saying so and what to do."""
    if not is_connect(spark):
        return failure
    text = str(failure)
    if "No module named 'lakestats" in text:
        answer = text
    else:
        try:
            answer = workers_lakestats(spark)
        except Exception:  # noqa: BLE001 - the probe failed too: the job's own error stands
            return failure
    if answer.startswith("ok"):
        if answer.split()[-1] != installed_version():
            return LakestatsError(
                f"{failure} (the Spark Connect server's Python workers run lakestats "
                f"{answer.split()[-1]}, this client {installed_version()}: install the "
                "same version on the server, or pass --ship-lakestats)"
            )
        return failure
    return _missing(answer)


def _missing(answer: str) -> LakestatsError:
    """The one line for workers whose import of lakestats gave ``answer``."""
    reason, _, where = answer.partition(" (worker Python ")
    where = where.rstrip(")") or "unknown"
    return LakestatsError(
        f"the Spark Connect server's Python workers cannot import lakestats ({reason}; "
        f"their Python is {where}): install lakestats=={installed_version()} into that "
        "Python on every node of the server, or pass --ship-lakestats (setting "
        "spark.ship_lakestats: this client's copy sent with the session by "
        "spark.addArtifacts) to run it without installing; see docs/deploy.md"
    )


def ship(spark: SparkSession) -> str:
    """Add this client's lakestats package to ``spark``'s Python path on the server (a
    Connect session only); the zip's path. Its dependencies must already be there."""
    if not is_connect(spark):
        raise InvalidArgumentError(
            "--ship-lakestats is for Spark Connect sessions (--remote sc://...): a classic "
            "session's executors import lakestats from their own Python"
        )
    path = package_zip()
    spark.addArtifacts(path, pyfile=True)
    return path


def package_zip() -> str:
    """This client's ``lakestats`` package as a zip (cached by content under the temp
    directory): every file of the package but bytecode caches."""
    package = PACKAGE
    files = sorted(
        p for p in package.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    directory = Path(tempfile.gettempdir()) / "lakestats-ship"
    directory.mkdir(exist_ok=True)
    target = directory / f"lakestats-{installed_version()}-{digest.hexdigest()[:12]}.zip"
    if not target.exists():
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in files:
                archive.write(path, str(Path("lakestats") / path.relative_to(package)))
        os.replace(partial, target)
    return str(target)
