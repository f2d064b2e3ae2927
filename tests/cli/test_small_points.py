"""Smaller points of the UX round (issue 35.7): one dump compared with itself is said; fish completion (run by
fish where it is installed); every command's ref and target described in --help."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from helpers.common import run_here

# the commands run in this process (what they answer is the question here, not how a process starts),
# with one pool of worker processes for the module
pytestmark = pytest.mark.usefixtures("commands_share_one_pool")


def test_the_same_folder_twice_is_said(demo_pair):
    for command in ("bisect", "compare"):
        code, out, err = run_here(command, demo_pair.ref, demo_pair.ref + "/")
        assert code == 0 and "ref and target are the same folder" in out, (command, out[-300:])
    code, out, _err = run_here("bisect", demo_pair.ref, demo_pair.ref, "--json", "-")
    assert any("same folder" in n for n in json.loads(out)["notes"])
    code, out, _err = run_here("bisect", demo_pair.ref, demo_pair.target)
    assert "same folder" not in out


def test_every_command_describes_its_dumps():
    for command in ("bisect", "compare", "remedy", "report"):
        code, out, _err = run_here(command, "--help")
        assert code == 0 and "the reference dump" in out and "the target dump" in out, command


def test_fish_completion_completes_commands_options_and_choices(tmp_path):
    code, script, err = run_here("completion", "fish")
    assert code == 0, err
    assert "complete -c dumptui" in script and "-l gain" in script and "-a bisect" in script
    fish = shutil.which("fish")
    if fish is None:
        pytest.skip("fish is not installed here (apt-get install fish): the script is not run by fish")
    path = tmp_path / "dumptui.fish"
    path.write_text(script)
    assert subprocess.run([fish, "-n", str(path)], capture_output=True, timeout=30).returncode == 0

    def complete(line: str) -> list[str]:
        done = subprocess.run(
            [fish, "-c", f"source {path}; complete -C '{line}'"], capture_output=True, text=True, timeout=30
        )
        return [row.split("\t")[0] for row in done.stdout.splitlines()]

    assert "bisect" in complete("dumptui bis")
    assert "--gain" in complete("dumptui bisect --ga")
    assert set(complete("dumptui compare --csv-profile ")) >= {"full", "msprobe"}
