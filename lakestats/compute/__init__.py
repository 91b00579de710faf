"""The Spark jobs. Spark is imported only in this package (the ``[spark]`` extra)."""

from lakestats import extras

extras.require("computing statistics on Spark", "pyspark", "pandas", "datasketches")
