"""The op tree: scopes as folders (`Default/block-Block/attn-Attention/MatMul-op0` -> folders Default,
block-Block, attn-Attention), ops as leaves, each folder with its worst verdict and how many ops inside
diverged, updated incrementally as verdicts arrive; and the flat execution-order rows.

Before the dumps are indexed, the tree is built from the reference's execution-order csv (`preview_pairs`):
names only, so it can be browsed while the index is made.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from dumptui.core.compare.verdict import BAD, ONLY_REF, ONLY_TARGET, PENDING, Verdict, worst
from dumptui.core.graph.align import OpPair
from dumptui.core.model.dump import CONSTANT, KERNEL, PARAMETER


def is_bad(verdict: Verdict | None) -> bool:
    """Diverged, shape or dtype mismatch: what `n`, `f` and the folders' ✗ counts look for."""
    return verdict in BAD


PARAMETERS_FOLDER = "(parameters)"
CONSTANTS_FOLDER = "(constants)"


_NO_FOLDERS: Mapping[str, Folder] = MappingProxyType({})  # a folder without sub-folders (most): shared


@dataclass(eq=False, slots=True)  # slots: the 20,000-op demo has 12,000 folders
class Folder:
    """A scope of the op tree. Counts are recursive: every op below this folder, at any depth."""

    path: str  # "Default/block-Block"; synthetic folders: "(parameters)"
    name: str  # "block-Block"
    parent: Folder | None
    synthetic: bool = False  # not a scope from the names (parameters / constants)
    # by name, in order of first execution (a dict once it has one: most folders hold ops only)
    folders: Mapping[str, Folder] = field(default_factory=lambda: _NO_FOLDERS)
    ops: list[int] = field(default_factory=list)  # pair indices directly here, in order
    first: int = -1  # the smallest pair index inside (orders siblings by execution)
    total: int = 0
    # verdict -> ops inside with it, as one flat tuple (verdict, count, verdict, count...) in the order verdicts
    # came (a dict of one or two each was 3 MB of the 20,000-op demo's 12,000 folders); `counts` reads a dict
    verdict_counts: tuple[Verdict | int, ...] = ()

    def __repr__(self) -> str:
        return f"Folder({self.path!r}, {self.total} ops)"

    def _counted(self) -> Iterator[tuple[Verdict, int]]:
        vc = self.verdict_counts
        return zip(vc[::2], vc[1::2])  # type: ignore[arg-type]  # verdicts at even places, counts at odd

    @property
    def counts(self) -> dict[Verdict, int]:
        return dict(self._counted())

    def count(self, verdict: Verdict, change: int) -> None:
        """`change` more ops inside with `verdict` (a count that reaches 0 goes, as a dict's key deleted)."""
        out: list[Verdict | int] = []
        found = False
        for v, n in self._counted():
            if v == verdict:
                n, found = n + change, True
                if not n:
                    continue
            out += (v, n)
        if not found:
            out += (verdict, change)
        self.verdict_counts = tuple(out)

    def add_folder(self, child: Folder) -> None:
        if self.folders is _NO_FOLDERS:
            self.folders = {}
        self.folders[child.name] = child  # type: ignore[index]  # a dict once it has one

    @property
    def known(self) -> int:
        return sum(n for _v, n in self._counted())

    @property
    def pending(self) -> int:
        return self.total - self.known

    @property
    def diverged(self) -> int:
        """Ops inside whose outputs are bad (diverged, shape or dtype mismatch)."""
        return sum(n for v, n in self._counted() if v in BAD)

    @property
    def verdict(self) -> Verdict:
        """The worst verdict inside; `pending` ranks between the bad and the good ones, so a folder with
        unknown ops never looks `equal` before they are computed."""
        present = [v for v, n in self._counted() if n]
        if self.pending:
            present.append(PENDING)
        # `<`/`>` (in one dump only) only when every op inside is: a folder holding a paired op is that op's
        paired = [v for v in present if v not in (ONLY_REF, ONLY_TARGET)]
        return worst(paired or present) or PENDING

    def ancestors(self) -> list[Folder]:
        """This folder and its parents up to (excluding) the root."""
        out = []
        f: Folder | None = self
        while f is not None and f.parent is not None:
            out.append(f)
            f = f.parent
        return out


def scope_parts(pair: TreePair) -> list[str]:
    """The folders an op sits in: its scope for kernels; parameters and constants get a folder of their own."""
    if pair.kind == PARAMETER:
        return [PARAMETERS_FOLDER]
    if pair.kind == CONSTANT:
        return [CONSTANTS_FOLDER]
    return [p for p in pair.name.split("/")[:-1] if p]


def leaf_name(pair: TreePair) -> str:
    """The op's label inside its folder: the last name component; both when the pairing renamed it."""
    if pair.kind != KERNEL:
        return pair.label
    leaf = pair.name.rsplit("/", 1)[-1]
    if pair.ref is not None and pair.target is not None and pair.ref.name != pair.target.name:
        other = pair.target.name
        same_scope = other.rsplit("/", 1)[0] == pair.name.rsplit("/", 1)[0]
        return f"{leaf} ↔ {other.rsplit('/', 1)[-1] if same_scope else other}"
    return leaf


@dataclass(eq=False)
class PreviewPair:
    """An op known only by its name, from the reference's execution-order csv: the tree can be browsed
    while the dumps are still being indexed (a 20,000-op dump takes seconds; the csv milliseconds)."""

    name: str
    index: int
    kind: str = KERNEL
    ref: None = None
    target: None = None
    how: str = "indexing"

    @property
    def paired(self) -> bool:
        return False

    @property
    def label(self) -> str:
        return self.name

    @property
    def key(self) -> str:
        return self.name

    @property
    def op_type(self) -> str:
        return self.name.rsplit("/", 1)[-1].split("-op")[0]


TreePair = OpPair | PreviewPair  # what the tree is built over: aligned pairs, or names only


def preview_pairs(path: str, rank: str | None = None) -> list[PreviewPair]:
    """The reference's kernels by name, in execution-order-csv order, read without indexing the dump
    ([] when the dump has no such csv or the rank is ambiguous: the tree then waits for the index).
    `rank` "all": every rank's, named `rank_R/...` as the indexed ranks are (ranks at the top of the tree)."""
    from dumptui.core.formats.files import RANK_DIR, read_execution_order
    from dumptui.core.formats.files import find_rank_dir as _find_rank_dir
    from dumptui.core.formats.files import list_dir as _ls

    ranks = [n for n in _ls(path) if RANK_DIR.match(n)]
    if rank == "all":
        every = [f"{r}/{p.name}" for r in sorted(ranks, key=len) for p in preview_pairs(path, r[len("rank_") :])]
        return [PreviewPair(n, i) for i, n in enumerate(every)]
    if ranks:
        want = f"rank_{rank}" if rank is not None else (ranks[0] if len(ranks) == 1 else None)
        rank_dir = os.path.join(path, want) if want in ranks else None
    else:
        rank_dir = _find_rank_dir(path)[0]
    if rank_dir is None:
        return []
    eo = os.path.join(rank_dir, "execution_order")
    names: list[str] = []
    for f in sorted(_ls(eo), key=lambda n: (len(n), n)):
        if f.startswith("ms_execution_order_graph_") and f.endswith(".csv"):
            names.extend(read_execution_order(os.path.join(eo, f)))
    return [PreviewPair(n, i) for i, n in enumerate(dict.fromkeys(names))]


class OpTreeModel:
    """Scopes as folders and ops as leaves, over every pair of an alignment; verdicts arrive incrementally.

    `pairs` must be the alignment's pairs (`pairs[i].index == i`). Building it touches names only, so a
    20,000-op dump is indexed in a fraction of a second; the UI asks `children()` only for expanded folders.
    """

    def __init__(self, pairs: Sequence[TreePair]):
        self.pairs = list(pairs)
        self.root = Folder("", "", None)
        # pair index -> the folder it sits in: a list (`pairs[i].index == i`), a dict of 29,000 was 1 MB more
        self.folder_of: list[Folder] = [self.root] * len(self.pairs)
        self.by_path: dict[str, Folder] = {"": self.root}
        self.verdicts: dict[int, Verdict] = {}
        for p in self.pairs:
            folder = self.root
            parts = scope_parts(p)
            for depth, part in enumerate(parts):
                child = folder.folders.get(part)
                if child is None:
                    path = "/".join(parts[: depth + 1])
                    child = Folder(
                        path,
                        part,
                        folder,
                        synthetic=part in (PARAMETERS_FOLDER, CONSTANTS_FOLDER) and depth == 0 and p.kind != KERNEL,
                        first=p.index,
                    )
                    folder.add_folder(child)
                    self.by_path[path] = child
                folder = child
            folder.ops.append(p.index)
            self.folder_of[p.index] = folder
            f: Folder | None = folder
            while f is not None:
                f.total += 1
                if f.first < 0 or p.index < f.first:
                    f.first = p.index
                f = f.parent

    def __len__(self) -> int:
        return len(self.pairs)

    def verdict(self, index: int) -> Verdict | None:
        return self.verdicts.get(index)

    def index_named(self, name: str) -> int | None:
        """The first op of this name (the reference's spelling where both sides have it), or None."""
        return next((p.index for p in self.pairs if p.name == name), None)

    def set_verdicts(self, updates: Mapping[int, Verdict | None]) -> tuple[set[int], set[Folder]]:
        """Record known verdicts (None = still unknown: ignored). Returns the ops and folders whose mark or
        counts changed, so the UI relabels only those."""
        ops: set[int] = set()
        folders: set[Folder] = set()
        for index, verdict in updates.items():
            if verdict is None:
                continue
            old = self.verdicts.get(index)
            if old == verdict:
                continue
            self.verdicts[index] = verdict
            ops.add(index)
            for f in self.folder_of[index].ancestors() + [self.root]:
                if old is not None:
                    f.count(old, -1)
                f.count(verdict, 1)
                folders.add(f)
        folders.discard(self.root)
        return ops, folders

    def path_to(self, index: int) -> list[Folder]:
        """The folders from the top down to the op's own folder."""
        return list(reversed(self.folder_of[index].ancestors()))

    def children(self, folder: Folder, only_diverged: bool = False) -> list[Folder | int]:
        """Sub-folders and ops of a folder in execution order (a sub-folder sits where its first op ran)."""
        subs = sorted((f for f in folder.folders.values() if not only_diverged or f.diverged), key=lambda f: f.first)
        ops = [i for i in folder.ops if not only_diverged or is_bad(self.verdicts.get(i))]
        out: list[Folder | int] = []
        si = oi = 0
        while si < len(subs) or oi < len(ops):
            if oi >= len(ops) or (si < len(subs) and subs[si].first < ops[oi]):
                out.append(subs[si])
                si += 1
            else:
                out.append(ops[oi])
                oi += 1
        return out

    def visible(self, index: int, only_diverged: bool) -> bool:
        return not only_diverged or is_bad(self.verdicts.get(index))

    def rows(self, only_diverged: bool = False) -> list[int]:
        """The flat list: every op in aligned execution order (kernels, then parameters and constants)."""
        if not only_diverged:
            return list(range(len(self.pairs)))
        return sorted(i for i, v in self.verdicts.items() if v in BAD)

    @property
    def diverged(self) -> int:
        return self.root.diverged
