"""Partition statistics reduced to the table level, without scanning data.

Contract: ``reduce_table`` (on Spark, ``spark.py``) and ``compute_and_reduce`` (one
partition computed and the table reduced in one task, ``local.py``) write a version's
table-level files and partition index and return the group cache entries the next
incremental reduction can reuse. Both run the same declared stages (``stages.STAGES``),
planned once (``stages.plan``). Modules, one concern each:

* ``job.py``        ``ReduceJob``: what is reduced (pickled to every task)
* ``fold.py``       what one group contributes (plain functions of its members), read
                    through what its task read ahead (``ReadAhead``)
* ``combine.py``    frequency rows summed per (column, value), by column
* ``prune.py``      a group's frequency candidates pruned with sound bounds
* ``finalize.py``   a column's frequencies finalized; the table files assembled
* ``cache.py``      groups and their cached partial results (and reading them ahead)
* ``wire.py``       every Spark schema of the reduction, and how values cross it
* ``stages.py``     the stages, their shapes and the one planning function
* ``local.py``, ``spark.py``  the two runners
"""

from lakestats.compute.reduce.job import ReduceJob
from lakestats.compute.reduce.local import compute_and_reduce, fits_one_task, write_parts_only
from lakestats.compute.reduce.spark import reduce_table

__all__ = [
    "ReduceJob", "compute_and_reduce", "fits_one_task", "reduce_table", "write_parts_only",
]
