"""Opening files of a dump: regular files only, checked without ever blocking, and side files read whole
within a limit.

A FIFO named like a tensor blocks `open()` until someone writes to it; a symlink to /dev/zero never ends; a
socket cannot be opened at all. Every file dumptui reads is opened here: `stat` first (never blocks), then
`open` with O_NONBLOCK (should the file be swapped for a FIFO after the stat, the open still returns at
once), then `fstat` of what was opened. Anything but a regular file is refused with an OSError that names
what it is. Symlinks are followed, and a loop of them is named as one. The `stat` is left out for the files
of a folder whose index found only regular files there (`listed_regular`): the index made that check.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from dumptui.core.io.fault import Fault, FileKind, Flaw, worded
from dumptui.core.io.limits import MAX_JSON_DEPTH, MAX_TEXT_FILE, BadValue, json_depth_ok, size_words

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class RefusedFile(OSError):
    """A path dumptui will not read: not a regular file, or a loop of symlinks. `fault` says why (as a code;
    `strerror` in report/'s words, see io/fault.py)."""

    def __init__(self, path: str, why: Fault):
        super().__init__(errno.EINVAL, worded(why), path)
        self.fault = why

    def __str__(self) -> str:
        return str(self.strerror)


def what_is(mode: int) -> FileKind:
    """What a file of this mode is (for the fault that refuses it)."""
    if stat.S_ISDIR(mode):
        return FileKind.FOLDER
    if stat.S_ISFIFO(mode):
        return FileKind.FIFO
    if stat.S_ISCHR(mode):
        return FileKind.CHAR_DEVICE
    if stat.S_ISBLK(mode):
        return FileKind.BLOCK_DEVICE
    if stat.S_ISSOCK(mode):
        return FileKind.SOCKET
    return FileKind.OTHER


def _refuse(path: str, mode: int) -> RefusedFile:
    return RefusedFile(path, Fault(Flaw.NOT_REGULAR, (what_is(mode),)))


def check_regular(path: str) -> os.stat_result:
    """The stat of `path` if it is a regular file (through symlinks); RefusedFile or OSError otherwise."""
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise RefusedFile(path, Fault(Flaw.SYMLINK_LOOP)) from None
        raise
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, st.st_mode)
    return st


# Folders (each ending with a separator) whose every tensor file the index found to be a regular file, none a
# symbolic link (formats/filecheck.py; an index from the cache is reused only while its folders are unchanged).
# A file there is opened without the `stat` first: that stat keeps `open` away from a device found at the path
# (opening one may act), which the index already did; what a swap since then brings in is still refused by the
# `fstat` of what was opened before anything is read (as a swap between a stat and an open is), and a FIFO's
# open still returns at once (O_NONBLOCK). The stat was a third of the system calls of reading a small tensor
# (26,002 files a side of the 1,000-layer MLP: ~2.6 us of CPU each). Kept for the life of the process.
_LISTED_FOLDERS: set[str] = set()


def listed_regular(folders: Iterable[str]) -> None:
    """`folders` (ending with a separator) hold regular files only, as their index found them."""
    _LISTED_FOLDERS.update(folders)


def is_listed(folder: str) -> bool:
    return folder in _LISTED_FOLDERS


def open_regular_fd(path: str) -> tuple[int, int]:
    """(file descriptor, size) of `path` opened for reading, if it is a regular file; RefusedFile or OSError
    otherwise. The caller closes the descriptor (for unbuffered reads: see npy.py)."""
    if path[: path.rfind(os.sep) + 1] not in _LISTED_FOLDERS:
        check_regular(path)
    fd = os.open(path, _FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(path, st.st_mode)
        return fd, st.st_size
    except BaseException:
        os.close(fd)
        raise


def open_regular(path: str) -> io.BufferedReader:
    """`path` opened for binary reading, if it is a regular file; RefusedFile or OSError otherwise."""
    fd, _size = open_regular_fd(path)
    try:
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def regular_size(path: str) -> int:
    """The size of a regular file (RefusedFile for anything else: the size of a FIFO or device says nothing)."""
    return check_regular(path).st_size


def read_bytes(path: str, limit: int = MAX_TEXT_FILE) -> bytes:
    """A whole side file, at most `limit` bytes; OSError when it is larger (reading it would cost more memory
    than a side file of a dump should), refused or unreadable."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise OSError(
                errno.EFBIG, f"{size} B, more than the {size_words(limit)} a file of this kind may have", path
            )
        # read(n) allocates n bytes before it reads: ask for what the file holds, never for the limit
        return fh.read(size)


def read_text(path: str, limit: int = MAX_TEXT_FILE) -> str:
    """A whole text side file, decoded as UTF-8 with undecodable bytes replaced."""
    return read_bytes(path, limit).decode("utf-8", errors="replace")


def text_lines(path: str, limit: int = MAX_TEXT_FILE) -> io.StringIO:
    """A text side file as a stream of lines (for csv readers), read within `limit`."""
    return io.StringIO(read_text(path, limit), newline="")


def bounded_lines(path: str, line_limit: int, limit: int = MAX_TEXT_FILE) -> Iterator[str]:
    """The lines of a text side file of at most `limit` bytes, read one at a time (a 200 MB graph never sits in
    memory whole, nor three times over as bytes, text and a StringIO's copy), decoded as UTF-8 with undecodable
    bytes replaced. ValueError naming the limit for a line longer than `line_limit` (parsing one would cost
    gigabytes: such a line is damage)."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise OSError(errno.EFBIG, f"{size} B, more than the {limit} B a graph file may have", path)
        number = 0
        while raw := fh.readline(line_limit + 1):
            number += 1
            if len(raw) > line_limit:
                raise ValueError(
                    f"line {number} is longer than {size_words(line_limit)} (a node is a few KB): not read, the "
                    "dump is read without this graph file (regenerate it, or remove it)"
                )
            yield raw.decode("utf-8", errors="replace")


def read_json(path: str, max_depth: int = MAX_JSON_DEPTH, limit: int = MAX_TEXT_FILE) -> Any:
    """A JSON document from a side file of at most `limit` bytes. OSError when it cannot be read; BadValue when
    it is not JSON or nests deeper than `max_depth`."""
    data = read_bytes(path, limit)
    try:
        doc = json.loads(data)
    except RecursionError:
        raise BadValue(f"not read: JSON nested deeper than {max_depth} levels") from None
    except (ValueError, MemoryError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise BadValue(f"not valid JSON: {e}") from None
    if not json_depth_ok(doc, max_depth):
        raise BadValue(f"not read: JSON nested deeper than {max_depth} levels")
    return doc


_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def _open_output_fd(path: str, flags: int = _WRITE_FLAGS) -> int:
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as e:
        if e.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "a FIFO (named pipe) that nothing reads: not written", path) from None
        raise OSError(e.errno, e.strerror, path) from None
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)  # a pipe with a reader: wait for it to drain, as any writer does
    return fd


@contextmanager
def _output_fd(path: str) -> Iterator[int]:
    """A descriptor to write `path` through. A regular file (or a new one) is written whole or not at all: into
    a temporary file beside it, renamed over it only once every byte and the close succeeded (a full disk
    leaves the previous file, or none, never half a CSV); through a symlink, the file it points to. A FIFO or a
    device is written in place. Any failure is an OSError naming `path`."""
    final = os.path.realpath(path)
    try:
        in_place = not stat.S_ISREG(os.stat(final).st_mode)
    except FileNotFoundError:
        in_place = False  # nothing there yet: made whole, or not at all
    except OSError as e:  # a loop of symlinks, a folder that cannot be searched...
        if e.errno == errno.ELOOP:
            raise OSError(e.errno, "a loop of symbolic links: not written", path) from None
        raise OSError(e.errno, e.strerror, path) from None
    if in_place:
        fd = _open_output_fd(path)
        try:
            yield fd
        finally:
            os.close(fd)
        return
    folder, name = os.path.split(final)
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.{id(path):x}.part")
    try:
        fd = _open_output_fd(temporary, _WRITE_FLAGS | os.O_EXCL)
    except OSError as e:
        raise OSError(e.errno, e.strerror, path) from None
    try:
        try:
            yield fd
        finally:
            os.close(fd)
        try:
            os.replace(temporary, final)
        except OSError as e:
            raise OSError(e.errno, e.strerror, path) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_bytes(path: str, data: bytes) -> None:
    """`data` written to `path` as open_output writes text (a FIFO nobody reads refused at once, a regular file
    whole or not at all); every failure, the last write's or the close's too (/dev/full), an OSError naming
    the path."""
    try:
        with _output_fd(path) as fd:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
    except OSError as e:
        if e.filename:
            raise
        raise OSError(e.errno, e.strerror, path) from None


@contextmanager
def open_output(path: str, newline: str | None = None) -> Iterator[TextIO]:
    """`path` opened for writing text, never blocking: a FIFO nobody reads is refused at once (opening it
    would wait for a reader forever), one that is read (`--json >(jq .)`) is written; a regular file is
    written to a temporary file renamed over it at the end (never left half written); devices (/dev/null)
    are written. Every failure, also one at the last write or the close (/dev/full: no space left), is an
    OSError naming the path."""
    try:
        with _output_fd(path) as fd:
            fh = os.fdopen(os.dup(fd), "w", encoding="utf-8", newline=newline)
            with fh:
                yield fh
    except OSError as e:
        if e.filename:
            raise
        raise OSError(e.errno, e.strerror, path) from None


def write_text(path: str, text: str) -> None:
    """`text` written to `path` (see open_output)."""
    with open_output(path) as fh:
        fh.write(text)
