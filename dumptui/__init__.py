"""dumptui: find the first operator where two tensor dumps (e.g. Ascend910 vs Ascend310) diverge."""

__version__ = "0.1.0"
