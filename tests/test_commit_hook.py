"""The commit-msg hook `make setup` installs (.githooks/commit-msg): a subject of at most 72 characters, then
a blank line; longer subjects and a body glued to the subject are refused with the reason."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

HOOK = Path(__file__).resolve().parent.parent / ".githooks" / "commit-msg"

pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="no POSIX shell to run the hook with")


def hook(tmp_path: Path, message: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "COMMIT_EDITMSG"
    path.write_text(message, encoding="utf-8")
    return subprocess.run(["sh", str(HOOK), str(path)], capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    "message",
    [
        "x" * 72 + "\n\nbody\n",
        "replay: torch pooling\n",
        "subject\n# a comment git strips\n",
    ],
)
def test_a_good_message_passes(tmp_path, message):
    assert hook(tmp_path, message).returncode == 0


def test_a_long_subject_is_refused_with_its_length(tmp_path):
    done = hook(tmp_path, "y" * 73 + "\n\nbody\n")
    assert done.returncode == 1 and "73 characters" in done.stderr


def test_a_body_glued_to_the_subject_is_refused(tmp_path):
    done = hook(tmp_path, "subject\nbody without a blank line\n")
    assert done.returncode == 1 and "blank line" in done.stderr
