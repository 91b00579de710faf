"""The Spark jobs. Spark is imported only in this package."""
