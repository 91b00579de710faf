"""Pure Arrow/NumPy statistics kernels: no Spark in this package."""
