"""The stored sample on Spark: ``create`` (draw it, and ``refresh`` it from the table's change
log: ``create.py``, one task per read unit in ``job.py``, hash, bottom-k and allocation in
``select.py``) and ``analyze --from-sample`` (``analyze.py``: footer bounds in ``bounds.py``,
the tasks' hook in ``tasks.py``, scaled files in ``files.py`` with the estimates of
``scale.py``)."""
