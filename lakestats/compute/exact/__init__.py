"""Exact table-level frequencies, distinct counts and ranks (``analyze --exact``).

``scenarios`` picks, per column, how to make the table level exact from the partitions'
own summaries; ``job`` runs it on Spark over the staged per-partition value counts
(``stats/value_counts.py``) and the partitions' complete frequency files, never the data:
``sources`` outlines and reads them by key range, ``ranges`` cuts the key ranges, ``merge``
is the range task (rank parts and frequency runs), ``frequencies`` merges the runs into the
table file, ``patch`` rewrites the table statistics and histogram rows.
"""
