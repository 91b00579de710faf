"""Reading statistics to answer questions: ``--where`` predicates (parse, normal form,
pruning, estimates, evaluation on Arrow data), which partitions a predicate keeps, the
estimator's inputs (partition index or statistics files) and the batched ``stats`` query.

Above ``store``/``formats``/``stats``, below ``compute`` (``analyze --where`` filters rows
with ``predicate_eval``) and ``api``. No Spark.
"""
