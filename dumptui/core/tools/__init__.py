"""Single-purpose tools over dumps: inspect one file, convert CANN raw dumps, write dump configs and re-dump configs for an interval."""
