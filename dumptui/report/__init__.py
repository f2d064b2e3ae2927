"""Renderings of core results: rich tables, CSV, JSON-ready data."""
