"""`dumptui completion`: a shell completion script."""

from __future__ import annotations

import argparse
import sys

from dumptui.headless import (
    EXIT_OK,
)

NAME = "completion"
SHELLS = ("bash", "zsh", "tcsh", "fish")
DESCRIPTION = (
    'Print a shell completion script: eval "$(dumptui completion bash)" (or zsh, tcsh); fish: '
    "dumptui completion fish > ~/.config/fish/completions/dumptui.fish"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("shell", choices=SHELLS)


def run(args: argparse.Namespace) -> int:
    import shtab

    # the parser of every command, handed over by main (this module is one of the commands it is built from)
    if args.shell == "fish":  # (shtab writes bash, zsh and tcsh only)
        sys.stdout.write(fish_script(args.every_parser()))
        return EXIT_OK
    sys.stdout.write(shtab.complete(args.every_parser(), shell=args.shell))
    return EXIT_OK


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_options(parser: argparse.ArgumentParser, condition: str) -> list[str]:
    lines = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or not action.option_strings:
            continue
        spec = []
        for flag in action.option_strings:
            spec.append(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
        takes_value = action.nargs != 0 and not isinstance(
            action, (argparse._StoreTrueAction, argparse._StoreFalseAction)
        )
        if action.choices:
            spec.append("-x -a " + _fish_quote(" ".join(str(c) for c in action.choices)))
        elif takes_value:
            spec.append("-r")  # a value: files complete
        if action.help and action.help != argparse.SUPPRESS and not action.choices:  # (else said per choice)
            spec.append("-d " + _fish_quote(action.help.split(";")[0][:80]))
        lines.append(f"complete -c dumptui -n {_fish_quote(condition)} " + " ".join(spec))
    return lines


def fish_script(parser: argparse.ArgumentParser) -> str:
    """fish's completions for every command and option, from the parsers themselves (the same source as the
    bash/zsh/tcsh scripts and the man page): subcommands first, then each one's options."""
    subs = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    lines = ["# dumptui completions for fish: dumptui completion fish > ~/.config/fish/completions/dumptui.fish"]
    names = list(subs.choices) if subs is not None else []
    helps = {c.dest: c.help for c in subs._choices_actions} if subs is not None else {}
    none_yet = "not __fish_seen_subcommand_from " + " ".join(names)
    for name in names:
        lines.append(
            f"complete -c dumptui -f -n {_fish_quote(none_yet)} -a {name} -d {_fish_quote((helps.get(name) or name)[:80])}"
        )
    lines += _fish_options(parser, none_yet)
    for name in names:
        assert subs is not None
        lines += _fish_options(subs.choices[name], f"__fish_seen_subcommand_from {name}")
    return "\n".join(lines) + "\n"
