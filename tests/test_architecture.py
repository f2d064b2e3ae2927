"""The import structure of dumptui: no module depends, directly or through others, on itself.

The rule, as this test applies it:
- A node is a module of the dumptui package (a .py file; a package is its __init__.py).
- An edge A -> B is any `import dumptui.B` / `from dumptui.B import ...` / `from .B import ...` /
  `from . import B` in A, at module level or inside a function or class: an import deferred into a function
  still makes A depend on B, it only hides the circle until that function runs.
- Imports under `if TYPE_CHECKING:` are not edges: they never run.
- `from P import name` is an edge to the submodule P.name when that is a module, else to P itself.
- Importing P.Q runs P's __init__ first, so it is also an edge to P, unless A lies inside P: a package's own
  modules import their siblings while the package is already loading, which is no circle (the __init__ that
  imports its submodules is the usual shape of a package).
- Every strongly connected component with more than one module (or a module importing itself) is a circle.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import networkx as nx
from helpers.common import REPO

PACKAGE = REPO / "dumptui"

# Imports that close a circle still present, each to be removed by the refactor named: the test removes these
# edges, then demands no circle; and it fails when one of them no longer closes a circle (delete it then: the
# test tightens as the refactors land).
KNOWN_CIRCLE_EDGES: dict[tuple[str, str], str] = {}  # none left: the app no longer imports the CLI


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path = REPO) -> dict[str, Path]:
    """{module name: file} of the dumptui package below `root`."""
    return {module_name(p, root): p for p in sorted((root / PACKAGE.name).rglob("*.py"))}


def _is_type_checking_block(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if _is_type_checking_block(node):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def _named_modules(name: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: dict[str, Path]) -> set[str]:
    """The modules an import statement names: `from P import x` names P.x when that is a module, else P."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if node.level:
        base = name.split(".")
        base = base[: len(base) - node.level + (1 if is_package else 0)]
        package = ".".join(base + ([node.module] if node.module else []))
    else:
        package = node.module or ""
    return {f"{package}.{alias.name}" if f"{package}.{alias.name}" in known else package for alias in node.names}


def _with_outer_packages(importer: str, target: str) -> set[str]:
    """`target` and the packages it is loaded through that do not contain `importer` (their __init__ runs)."""
    parts = target.split(".")
    chain = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return {m for m in chain if not (importer == m or importer.startswith(m + "."))}


def imported_modules(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The dumptui modules that module `name` depends on through its imports."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        for target in _named_modules(name, is_package, node, known):
            out.update(m for m in _with_outer_packages(name, target) if m in known)
    return out


def import_graph(root: Path = REPO) -> nx.DiGraph:
    known = modules(root)
    graph = nx.DiGraph()
    graph.add_nodes_from(known)
    for name, path in known.items():
        graph.add_edges_from((name, target) for target in imported_modules(name, path, known))
    return graph


def circles(graph: nx.DiGraph) -> list[list[str]]:
    return [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1] + [
        [n] for n in graph if graph.has_edge(n, n)
    ]


def test_the_import_graph_is_read():
    graph = import_graph()
    assert graph.has_edge("dumptui.core.formats.registry", "dumptui.core.formats.mindspore")
    assert graph.has_edge("dumptui.core.model.dump", "dumptui.core.io.dtypes")
    assert graph.has_edge("dumptui.cli.info", "dumptui.core.formats")


def write_tree(root: Path, files: dict[str, str]) -> None:
    """A planted package: each relative path written with its text."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_a_circle_through_a_package_init_is_found(tmp_path):
    """The circle this rule was written for: core.graph imported the IR model from inside the formats package,
    whose __init__ imports the readers, which import core.graph."""
    files = {
        "dumptui/__init__.py": "",
        "dumptui/core/__init__.py": "",
        "dumptui/core/graph.py": "from .formats.irgraph import IRGraph\n",
        "dumptui/core/formats/__init__.py": "def detect(path):\n    from . import mindspore\n",
        "dumptui/core/formats/irgraph.py": "",
        "dumptui/core/formats/mindspore.py": "from ..graph import attach_ir\nfrom .irgraph import IRGraph\n",
    }
    write_tree(tmp_path, files)
    assert circles(import_graph(tmp_path)) == [
        ["dumptui.core.formats", "dumptui.core.formats.mindspore", "dumptui.core.graph"]
    ]


def test_no_import_circles_but_the_known_ones():
    graph = import_graph()
    closing = {
        edge: why
        for edge, why in KNOWN_CIRCLE_EDGES.items()
        if graph.has_edge(*edge) and nx.has_path(graph, edge[1], edge[0])
    }
    assert closing == KNOWN_CIRCLE_EDGES, (
        "no longer close a circle (delete them from KNOWN_CIRCLE_EDGES): "
        + ", ".join(f"{a} -> {b}" for a, b in KNOWN_CIRCLE_EDGES.keys() - closing.keys())
    )
    graph.remove_edges_from(KNOWN_CIRCLE_EDGES)
    found = circles(graph)
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_core_does_not_import_the_layers_above():
    graph = import_graph()
    above = ("dumptui.cli", "dumptui.tui", "dumptui.report")
    wrong = [(a, b) for a, b in graph.edges if a.startswith("dumptui.core") and b.startswith(above)]
    assert not wrong


def _contract_layers() -> list[str]:
    """Every module prefix the layer contracts of pyproject.toml name (a container's layers inside it)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    named: list[str] = []
    for contract in config["contracts"]:
        if contract["type"] != "layers":
            continue
        containers = contract.get("containers") or [""]
        for layer in contract["layers"]:
            for part in layer.replace(":", "|").split("|"):
                part = part.strip().strip("()")
                named += [f"{c}.{part}" if c else part for c in containers]
    return named


def _in_layer(module: str, layers: list[str]) -> bool:
    return any(module == layer or module.startswith(layer + ".") for layer in layers)


def test_every_module_belongs_to_a_layer_of_the_contracts():
    """A module outside every layer escapes the contracts: the engine could import it and every contract
    would stay KEPT. The package roots (`dumptui`, `dumptui.core`) hold nothing but a docstring."""
    layers = _contract_layers()
    roots = {"dumptui", "dumptui.core"}
    outside = [m for m in modules() if m not in roots and not _in_layer(m, layers)]
    assert not outside, "modules in no layer of pyproject.toml's contracts: " + ", ".join(outside)
    for root in roots:
        tree = ast.parse(modules()[root].read_text())
        assert all(isinstance(n, (ast.Expr, ast.Assign, ast.ImportFrom)) for n in tree.body), root


def test_a_module_outside_the_layers_is_found():
    layers = ["dumptui.cli", "dumptui.core", "dumptui.core.io"]
    assert _in_layer("dumptui.core.io.npy", layers)
    assert not _in_layer("dumptui.msprobe_layers", layers)
    assert not _in_layer("dumptui.clix", layers)


def test_no_test_module_imports_another_test_module_or_conftest():
    """Shared test code lives in tests/helpers/; a test module importing another runs that module's tests'
    imports and fixtures twice under two names, and hides where the shared code is."""
    tests = REPO / "tests"
    wrong = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            leaves = [n.rsplit(".", 1)[-1] for n in names]
            wrong += [
                f"{path.relative_to(tests)} imports {n}" for n in leaves if n.startswith("test_") or n == "conftest"
            ]
    assert not wrong, "; ".join(wrong)


def test_tests_mirror_the_package():
    """A test folder names a folder or module of the package (tests/core/compare/ tests dumptui/core/compare/)."""
    tests = REPO / "tests"
    own = {"helpers", "fuzz", "__snapshots__", "__pycache__"}
    for folder in sorted(p for p in tests.rglob("*") if p.is_dir()):
        rel = folder.relative_to(tests)
        if own & set(rel.parts):
            continue
        mirrored = PACKAGE / rel
        assert mirrored.is_dir() or mirrored.with_suffix(".py").is_file(), f"tests/{rel} mirrors nothing of dumptui/"


def test_architecture_names_every_engine_module():
    """ARCHITECTURE.md's map of the engine names every module of dumptui/core (by its file name or path), so
    a new module cannot land without its line."""
    import os
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    text = (repo / "ARCHITECTURE.md").read_text()
    core = repo / "dumptui" / "core"
    missing = []
    for root, _dirs, files in os.walk(core):
        for f in files:
            if f.endswith(".py") and f != "__init__.py" and f"`{f[:-3]}" not in text and f not in text:
                missing.append(os.path.relpath(os.path.join(root, f), core))
    assert not missing, f"modules of dumptui/core with no line in ARCHITECTURE.md: {sorted(missing)}"


def face_imports(root: Path = REPO) -> list[tuple[str, str]]:
    """(member, name) for every `from P import name` in a module of package P where `name` is no module of P:
    a member reading its own package's face (its __init__), which imports the members: a circle the graph
    above leaves out (a package's modules may import their siblings while it loads, not its face)."""
    known = modules(root)
    out = []
    for name, path in known.items():
        if path.name == "__init__.py":
            continue
        package = name.rsplit(".", 1)[0]
        for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = node.module if node.level == 0 else (package if node.level == 1 and node.module is None else None)
            if source != package:
                continue
            out += [(name, a.name) for a in node.names if f"{package}.{a.name}" not in known]
    return sorted(out)


def test_no_module_imports_its_own_package_face():
    assert face_imports() == []


def test_a_face_import_is_found(tmp_path):
    files = {
        "dumptui/__init__.py": "",
        "dumptui/pkg/__init__.py": "from dumptui.pkg.member import f\ndef open_it():\n    pass\n",
        "dumptui/pkg/member.py": "from dumptui.pkg import open_it\nfrom dumptui.pkg import sibling\n",
        "dumptui/pkg/sibling.py": "from . import member\n",
    }
    write_tree(tmp_path, files)
    assert face_imports(tmp_path) == [("dumptui.pkg.member", "open_it")]  # a sibling module is no face import
