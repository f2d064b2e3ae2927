"""Cells that a spreadsheet shows and never runs: CSV and xlsx exports hold op names and paths taken from the
dumps, and a name beginning with `=`, `+`, `-` or `@` (or a tab or carriage return) is a formula to Excel,
LibreOffice and Google Sheets (CSV injection). As OWASP advises, such a text cell is written with a leading
`'`, which spreadsheets take as "text" and do not show; numbers (`-0.5`, `-inf`) stay numbers."""

from __future__ import annotations

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def csv_safe(value: object) -> object:
    """The value to write in a CSV cell: a text a spreadsheet would run as a formula gets a leading quote."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _is_number(value):
        return "'" + value
    return value


def csv_safe_row(row: dict) -> dict:
    return {k: csv_safe(v) for k, v in row.items()}
