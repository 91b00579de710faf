"""The one place where what Spark raises becomes a ``LakestatsError`` (one line).

A session that does not start (no Java, a bogus ``JAVA_HOME``, no memory) is
``spark_start_error``: its first line, where Spark's own log is, and what to do. A job's
failure (``spark_call`` / ``translated``) is the last meaningful line of what Spark raised:
executors' Python tracebacks and JVM stack traces end in the message that says why.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from typing import TypeVar

from lakestats.errors import LakestatsError

T = TypeVar("T")


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def last_line(exc: BaseException) -> str:
    """The last line that is not a stack frame: where Spark's wrapped errors say why (a
    lakestats error an executor raised is its own line already: its class name dropped)."""
    for line in reversed(str(exc).strip().splitlines()):
        line = line.strip()
        if line and not line.startswith(("at ", "File ", "JVM stacktrace")):
            return _OWN_ERROR.sub("", line, count=1)
    return type(exc).__name__


_OWN_ERROR = re.compile(r"^lakestats\.errors\.\w+: ")


def spark_start_error(
    exc: BaseException, log_path: str | None = None, hint: str = "lakestats needs Java 17"
) -> LakestatsError:
    """A JVM (or session) that did not start, as one line naming Spark's log file."""
    where = f"; its log is {log_path}" if log_path else ""
    return LakestatsError(f"Spark did not start ({first_line(exc)}){where}; {hint}")


@contextlib.contextmanager
def starting_spark(
    log_path: str | None = None, hint: str = "lakestats needs Java 17"
) -> Iterator[None]:
    """Around ``getOrCreate()``: a session that does not start is ``spark_start_error``."""
    try:
        yield
    except LakestatsError:
        raise
    except Exception as exc:
        raise spark_start_error(exc, log_path, hint) from exc


@contextlib.contextmanager
def translated(what: str) -> Iterator[None]:
    """Around a Spark job: what Spark raises becomes ``LakestatsError("<what>: <why>")``."""
    try:
        yield
    except LakestatsError:
        raise
    except Exception as exc:
        raise LakestatsError(f"{what}: {last_line(exc)}") from exc


def spark_call(what: str, call: Callable[[], T]) -> T:
    """``call()``, with what Spark raises from executors turned into one line."""
    with translated(what):
        return call()
