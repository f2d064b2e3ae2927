"""Imports point down the layers: dumptui.core (and dumptui.present, the app's presentation model, and
dumptui.options.pair) import, and work, with textual and rich absent; the engine never imports the presentation
model, the app never imports the CLI."""

from __future__ import annotations

import subprocess
import sys

from helpers.common import REPO

BLOCKER = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('textual', 'rich'):
            raise ImportError('blocked for the test: ' + name)
        return None
sys.meta_path.insert(0, Block())
import pkgutil, importlib, dumptui.core
for m in pkgutil.walk_packages(dumptui.core.__path__, 'dumptui.core.'):
    importlib.import_module(m.name)
above = [m for m in sys.modules if m.split('.')[:2] in (['dumptui', 'present'], ['dumptui', 'tui'], ['dumptui', 'cli'])]
assert not above, 'the engine imports a layer above it: %s' % above
import dumptui.present, dumptui.options.pair
for m in pkgutil.walk_packages(dumptui.present.__path__, 'dumptui.present.'):
    importlib.import_module(m.name)
from dumptui.core.demo.residual import write_demo
from dumptui.core.formats import open_dump
from dumptui.core.compare.session import Session
from dumptui.core.search.bisect import Bisection
import tempfile
d = tempfile.mkdtemp()
info = write_demo(d, n_ops=20, size=64)
bi = Bisection(Session(open_dump(info.ref), open_dump(info.target)))
bi.run()
assert bi.first_root().pair.name == info.planted
assert 'textual' not in sys.modules and 'rich' not in sys.modules
print('ok')
"""


def test_core_and_present_without_textual_and_rich():
    p = subprocess.run(
        [sys.executable, "-c", BLOCKER],
        capture_output=True,
        text=True,
        cwd=str(REPO),
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "ok"


def test_the_app_never_imports_the_cli():
    """The CLI starts the app; the app opens dumps through dumptui.options.pair, so there is no import circle."""
    code = (
        "import sys, pkgutil, importlib, dumptui.tui\n"
        "for m in pkgutil.walk_packages(dumptui.tui.__path__, 'dumptui.tui.'):\n"
        "    importlib.import_module(m.name)\n"
        "import dumptui.options.pair\n"
        "assert 'dumptui.cli' not in sys.modules, 'the app imported the CLI'\n"
        "print('ok')\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=str(REPO),
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "ok"
