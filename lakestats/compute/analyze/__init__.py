"""The analyze job: one Spark task per partition (or per slice of a large one), then the
table level, then the version published; by concern:

- ``columns``: which leaves are analyzed and what the version records of them;
- ``stages``: the per-partition Spark job (slices, then merging split partitions);
- ``reuse``: what the latest version lends a new analyze (intact partitions, caches);
- ``publish``: the version with what engines read of it, and cleaning up after a failed run;
- ``unchanged``: an analyze with nothing to compute, answered without Spark;
- ``run``: the driver that plans, runs and publishes one analyze.
"""

from lakestats.compute.analyze.columns import RowSubset, column_records, select_columns
from lakestats.compute.analyze.publish import publish_version
from lakestats.compute.analyze.run import analyze

__all__ = [
    "RowSubset",
    "analyze",
    "column_records",
    "publish_version",
    "select_columns",
]
