"""The comparison engine: pure Python, numpy and networkx. No textual, no rich (a test enforces it)."""
