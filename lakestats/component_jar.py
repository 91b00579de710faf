"""Where the Spark component's jar is, for the Spark a user runs.

The wheel carries one jar per Spark line it supports (``lakestats/jars/``, put there by
``make wheel``): ``lakestats-spark.jar`` built against Spark 4.1's interfaces (Spark 4.x)
and ``lakestats-spark-3.5.jar`` (Spark 3.5, Scala 2.12). A clone without a wheel build has
them under ``build/jvm`` and ``build/jvm35`` (``make jvm jvm35``).
"""

from __future__ import annotations

import re
from pathlib import Path

from lakestats.errors import InvalidArgumentError, UnsupportedFeatureError

JARS = Path(__file__).resolve().parent / "jars"
_CLONE_BUILD = Path(__file__).resolve().parents[1] / "build"
_LINES = {
    "3.5": ("lakestats-spark-3.5.jar", "jvm35"),
    "4": ("lakestats-spark.jar", "jvm"),
}


def spark_line(version: str) -> str:
    """The component's Spark line for a Spark version: ``3.5`` or ``4``."""
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?([.-]\w+)*", version):
        raise InvalidArgumentError(
            f"{version!r} is not a Spark version: write it as Spark prints it, e.g. 3.5.1 or 4.1.0"
        )
    parts = version.split(".")
    if parts[0] == "4":
        return "4"
    if parts[:2] == ["3", "5"]:
        return "3.5"
    raise UnsupportedFeatureError(
        f"the Spark component supports Spark 3.5 and 4.x, not Spark {version}: "
        "run lakestats' statistics through Iceberg Puffin files or `lakestats spark-register` "
        "instead"
    )


def running_spark_version() -> str:
    """The version of the active Spark session's engine, else the installed PySpark's."""
    import pyspark
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    return active.version if active is not None else pyspark.__version__


def jar_path(spark_version: str | None = None) -> str:
    """The component jar for ``spark_version`` (default: the running Spark's), as a path for
    ``spark.jars``."""
    version = spark_version or running_spark_version()
    name, build_dir = _LINES[spark_line(version)]
    for candidate in (JARS / name, _CLONE_BUILD / build_dir / name):
        if candidate.is_file():
            return str(candidate)
    raise UnsupportedFeatureError(
        f"no Spark component jar for Spark {version} in this installation ({JARS / name}): "
        "install lakestats from its wheel, or run `make jvm jvm35` in a clone"
    )
