"""What other engines read of lakestats' statistics: Iceberg's Puffin files (``puffin``), the
files of lakestats' Spark component (``spark_statistics``), Paimon's statistics JSON
(``paimon``). The analyze job publishes them in one step (``compute/analyze/publish.py``)."""
