"""How an analyze task ended (the ``kind`` column of its one-row summary, ``SUMMARY_SCHEMA``
in ``compute/tasks.py``): a ``StrEnum``, so the summaries Spark carries keep the strings."""

from __future__ import annotations

from enum import StrEnum


class TaskOutcome(StrEnum):
    DONE = "done"  # the partition's files are written
    PARTIAL = "partial"  # one slice of a large partition: a pickled state to merge
    ERROR = "error"  # the task failed; ``error`` says why
