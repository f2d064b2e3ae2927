"""A config or flags that ignore every op leave nothing judged: that is no answer (exit 2, saying every op
was ignored and by which rule), never "no divergence" (exit 0)."""

from __future__ import annotations

import pytest
from helpers.common import run_here

# the commands run in this process (what they answer is the question here, not how a process starts),
# with one pool of worker processes for the module
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


def test_ignoring_every_op_is_exit_2_naming_the_rule(demo_pair, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('ignore = ["*"]\n')
    for command in ("bisect", "compare"):
        for how in ("flag", "config"):
            extra = ["--ignore", "*"] if how == "flag" else []
            env = {"DUMPTUI_CONFIG": str(config)} if how == "config" else None
            code, out, err = run_here(command, demo_pair.ref, demo_pair.target, *extra, env_extra=env)
            said = out + err
            assert code == 2, (command, how, said[-400:])
            assert "every op's outputs are ignored" in said and "(*)" in said, (command, how)


def test_ignoring_some_ops_still_answers(demo_pair):
    code, out, _err = run_here("bisect", demo_pair.ref, demo_pair.target, "--ignore", "*Sigmoid*")
    assert code == 1 and "every op's outputs are ignored" not in out


def test_every_step_with_every_op_ignored_is_undecided_never_no_divergence(demo_pair):
    """`--step all` ran each unit with nothing judged, exited 2, and printed "no divergence" for the unit and
    "No divergence in any rank or step" for the run."""
    for command in ("bisect", "compare"):
        code, out, err = run_here(command, demo_pair.ref, demo_pair.target, "--step", "all", "--ignore", "*")
        assert code == 2, (command, err)
        assert "no divergence" not in out.lower(), (command, out)
        assert "undecided: every op's outputs are ignored" in out and "Undecided (exit code 2)" in out, out


def test_report_and_remedy_say_why_they_exit_2(demo_pair, tmp_path):
    """`report` wrote its file and `remedy` said "No culprit", each exiting 2 without a word of why."""
    out_file = tmp_path / "report.md"
    for args in (("report", "--out", out_file), ("remedy",)):
        code, _out, err = run_here(args[0], demo_pair.ref, demo_pair.target, *args[1:], "--ignore", "*")
        assert code == 2 and "undecided (exit code 2): every op's outputs are ignored" in err, (args[0], err)
