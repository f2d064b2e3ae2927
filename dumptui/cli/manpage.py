"""The man page (docs/dumptui.1) written from the parsers themselves, so it never disagrees with `--help`:
`python -m dumptui.cli.manpage > docs/dumptui.1` (a test fails while the file is out of date)."""

from __future__ import annotations

import argparse
import sys

from dumptui import __version__
from dumptui.cli.parser import COMMANDS, SUBCOMMANDS, build_parser

EXIT_CODES = (
    ("0", "no root of divergence (a benign pair too)"),
    ("1", "a root of divergence found (bisect, compare)"),
    ("2", "bad usage, unreadable input, nothing to compare, or an answer that damage leaves incomplete"),
)


def _roff(text: str) -> str:
    """Text safe in a roff line: backslashes doubled, a leading dot or quote escaped, dashes as hyphens."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def _options(parser: argparse.ArgumentParser) -> list[str]:
    out: list[str] = []
    for action in parser._actions:  # argparse keeps no public list of a parser's options
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        if action.option_strings:
            flags = ", ".join(action.option_strings)
            if action.nargs != 0:
                flags += f" {action.metavar or action.dest.upper()}"
        else:
            flags = str(action.metavar or action.dest).upper()
        out += [".TP", f"\\fB{_roff(flags)}\\fR", _roff(" ".join((action.help or "").split()) % vars(action))]
    return out


def page() -> str:
    main = build_parser(None)
    lines = [
        f'.TH DUMPTUI 1 "" "dumptui {__version__}" "User Commands"',
        ".SH NAME",
        "dumptui \\- find the first operator where two tensor dumps diverge",
        ".SH SYNOPSIS",
        "\\fBdumptui\\fR [\\fIOPTIONS\\fR] \\fIREF\\fR \\fITARGET\\fR",
        ".br",
        "\\fBdumptui\\fR \\fISUBCOMMAND\\fR [\\fIOPTIONS\\fR] ...",
        ".SH DESCRIPTION",
        _roff(" ".join((main.description or "").split())),
        ".SH OPTIONS (the terminal app)",
        *_options(main),
        ".SH SUBCOMMANDS",
    ]
    for name in SUBCOMMANDS:
        parser = build_parser(name)
        lines += [".SS " + _roff(f"dumptui {name}"), _roff(" ".join(COMMANDS[name].DESCRIPTION.split()))]
        lines += _options(parser)
    lines += [".SH EXIT STATUS"]
    for code, words in EXIT_CODES:
        lines += [".TP", f"\\fB{code}\\fR", _roff(words)]
    lines += [
        ".SH ENVIRONMENT",
        ".TP",
        "\\fBDUMPTUI_CONFIG\\fR",
        _roff("a config file other than $XDG_CONFIG_HOME/dumptui/config.toml"),
        ".TP",
        "\\fBDUMPTUI_NO_INDEX_CACHE\\fR",
        _roff("1: index the dumps without the index cache in $XDG_CACHE_HOME/dumptui"),
        ".SH SEE ALSO",
        _roff("docs/ in the source tree: install, workflow, commands, formats, keys, speed"),
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(page())
