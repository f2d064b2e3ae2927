"""Dask is an optional extra: without it, `compare --dask` says how to get it (exit 2), and nothing else
needs it (the engine imports it only when a cluster is asked for)."""

from __future__ import annotations

import sys

import pytest

from dumptui import cli
from dumptui.core.compare.daskexec import DaskCluster
from dumptui.core.io.errors import UsageError


def test_without_dask_the_message_says_how_to_install_it(monkeypatch, capsys, demo_pair):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(UsageError, match="pip install 'dumptui\\[dask\\]'"):
        DaskCluster("local:2")
    assert cli.main(["compare", demo_pair.ref, demo_pair.target, "--dask", "local:2"]) == 2
    assert "--dask needs Dask distributed, an optional extra" in capsys.readouterr().err


def test_bad_cluster_arguments(demo_pair, capsys):
    pytest.importorskip("distributed", reason="Dask distributed not installed: its argument checks need it")
    assert cli.main(["compare", demo_pair.ref, demo_pair.target, "--dask", "local:zero"]) == 2
    assert "expected local:N" in capsys.readouterr().err
    assert cli.main(["compare", demo_pair.ref, demo_pair.target, "--worker-path", "/a=/b"]) == 2
    assert "--worker-path goes with --dask" in capsys.readouterr().err


def test_the_engine_imports_without_dask():
    import subprocess

    code = (
        "import sys; sys.modules['distributed'] = None; sys.modules['dask'] = None\n"
        "import dumptui.core.compare.daskexec, dumptui.core.compare.batch, dumptui.core.search.compare_all, dumptui.cli\n"
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
