"""lakestats: a statistics metastore for data-lake tables."""

from lakestats.errors import LakestatsError

__all__ = ["LakestatsError", "__version__"]
__version__ = "0.1.0"
