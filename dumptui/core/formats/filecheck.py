"""Every tensor file of an index checked before anything reads it: a regular file, and where it really is.

Readers index from file names, and a name does not say what stands behind it. Here each folder that holds
tensors is listed once more (`os.scandir` gives each entry's type without a stat, so this costs one listing
per folder): an entry that is not a regular file (a FIFO, a socket, a device) is refused, its tensors marked
unreadable and named in the dump's problems; a symbolic link is resolved (a loop or a dangling link is named
as one) and must lead to a regular file; a link, or a tensor folder, that leads outside the dump folder is
reported. Such a file is still read when it is a regular file: dumps are often assembled with links, but
the user is told which files are not where the dump is.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import defaultdict

from dumptui.core.io.fault import Fault, Flaw, os_text
from dumptui.core.io.indexing_progress import EVERY, Stage, report
from dumptui.core.io.safeio import what_is
from dumptui.core.model.dump import Dump, Problem, Severity, TensorRef

ERROR, WARNING = Severity.ERROR, Severity.WARNING


def _under(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _link_problem(path: str, roots: list[str] | None) -> tuple[Severity, Fault] | None:
    """(severity, reason) for a symbolic link, None when it leads to a regular file inside `roots` (None:
    the folder is already reported as outside)."""
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return ERROR, Fault(Flaw.LINK_LOOP)
        if e.errno == errno.ENOENT:
            return ERROR, Fault(Flaw.LINK_TO_NOTHING)
        return ERROR, Fault(Flaw.LINK_UNFOLLOWED, (os_text(e),))
    if not stat.S_ISREG(st.st_mode):
        return ERROR, Fault(Flaw.LINK_TO_NOT_REGULAR, (what_is(st.st_mode),))
    target = os.path.realpath(path)
    if roots is not None and not _under(target, roots):
        return WARNING, Fault(Flaw.LINK_OUTSIDE, (target,))
    return None


def _entry_problem(entry: os.DirEntry[str], roots: list[str] | None) -> tuple[Severity, Fault] | None:
    try:
        if entry.is_symlink():
            return _link_problem(entry.path, roots)
        if entry.is_file(follow_symlinks=False):
            return None
        mode = entry.stat(follow_symlinks=False).st_mode
    except OSError as e:
        return ERROR, Fault(Flaw.NOT_EXAMINED, (os_text(e),))
    return ERROR, Fault(Flaw.NOT_REGULAR, (what_is(mode),))


def _split(t: TensorRef) -> tuple[str, str]:
    """os.path.split of the tensor's path, from the folder and name it keeps (joining them and splitting
    them again cost more than the check of a dump's thousands of files)."""
    folder, name = t.folder_and_name
    sep = os.sep
    if sep in name or not folder.endswith(sep) or folder.endswith(sep + sep) or folder == sep:
        return os.path.split(folder + name)
    return folder[:-1], name


class _Counted:
    """How many of the dump's tensor files were examined, reported every EVERY files and at each folder's end."""

    def __init__(self, total: int):
        self.done, self.total = 0, total
        report(Stage.CHECKING, 0, total)

    def one(self) -> None:
        self.done += 1
        if self.done % EVERY == 0:
            report(Stage.CHECKING, self.done, self.total)

    def folder_end(self) -> None:
        report(Stage.CHECKING, self.done, self.total)  # each folder's end (a dump has a few)


def _folder_problems(
    folder: str, wanted: set[str], inside: list[str] | None, counted: _Counted
) -> tuple[dict[str, tuple[Severity, Fault]], bool] | None:
    """The problem of each entry of `folder` named in `wanted` that has one, and whether every wanted entry
    is there as a regular file (no link, nothing missing); None when the folder cannot be listed (its tensors
    say so when they are read)."""
    found: dict[str, tuple[Severity, Fault]] = {}
    plain = 0  # wanted entries that are regular files, not links
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name in wanted:
                    problem = _entry_problem(entry, inside)
                    if problem is not None:
                        found[entry.name] = problem
                    elif not entry.is_symlink():  # (a regular file: _entry_problem found it so)
                        plain += 1
                    counted.one()
    except OSError:
        return None
    finally:
        counted.folder_end()
    return found, plain == len(wanted)


def check_tensor_files(dump: Dump) -> None:
    """Refuse the tensors whose file is not a regular file; report links and folders leading outside; keep
    the folders of regular files only (Dump.plain_folders)."""
    by_folder: dict[str, list[tuple[TensorRef, str]]] = defaultdict(list)  # folder -> (tensor, file name)
    for op in dump.ops:
        for t in op.tensors():
            if t.has_data:
                folder, name = _split(t)
                by_folder[folder].append((t, name))
    roots = list({os.path.realpath(dump.root), os.path.realpath(os.path.abspath(dump.path))})
    known = {p.path for p in dump.problems}
    counted = _Counted(sum(len(tensors) for tensors in by_folder.values()))
    listed: set[str] = set()  # folders of regular files only (safeio.listed_regular: opened without a stat)
    for folder, tensors in by_folder.items():
        real = os.path.realpath(folder)
        inside: list[str] | None = roots
        if not _under(real, roots):
            inside = None  # one warning for the folder, not one per file
            if folder not in known:
                reason = Fault(Flaw.FOLDER_OUTSIDE, (real,))
                dump.problems.append(Problem(folder, reason, WARNING))
        checked = _folder_problems(folder, {name for _t, name in tensors}, inside, counted)
        if checked is None:
            continue
        found, plain = checked
        if plain and inside is not None and not found:
            first = tensors[0][0].path
            listed.add(first[: first.rfind(os.sep) + 1])  # as safeio cuts a path of it: with its separator
        for t, name in tensors:
            problem = found.get(name)
            if problem is not None and problem[0] == ERROR:
                t.refuse(problem[1])
        for name, (severity, reason) in sorted(found.items()):
            path = os.path.join(folder, name)
            if path not in known:
                dump.problems.append(Problem(path, reason, severity))
    dump.plain_folders = frozenset(listed)
