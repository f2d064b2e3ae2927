"""dumptui.core must import, and work, with textual and rich absent."""
from __future__ import annotations

import subprocess
import sys

from conftest import REPO

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
from dumptui.core.demo import write_demo
from dumptui.core.formats import open_dump
from dumptui.core.session import Session
from dumptui.core.bisect import Bisection
import tempfile
d = tempfile.mkdtemp()
info = write_demo(d, n_ops=20, size=64)
bi = Bisection(Session(open_dump(info.ref), open_dump(info.target)))
bi.run()
assert bi.first_root().pair.name == info.planted
assert 'textual' not in sys.modules and 'rich' not in sys.modules
print('ok')
"""


def test_core_without_textual_and_rich():
    p = subprocess.run([sys.executable, "-c", BLOCKER], capture_output=True, text=True, cwd=str(REPO),
                       env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "ok"
