"""Are two dump files byte-identical? Cheaply: sizes first, then a few sampled blocks, then the whole files
streamed side by side (stopping at the first difference), and remembered.

The preconditions compare every weight and input pair of the two dumps before bisecting; on a clean pair they
are all equal, and a model's weights are most of its bytes. Sampling finds a differing pair after a few
blocks; an equal pair must be read whole once, in blocks (memory stays bounded), and is then remembered in
the user's cache folder by both files' path, size, modification time and inode, so the next run of the same
pair reads little of them. Only equal pairs are remembered, and only files unchanged for RACY_SECONDS.

What the memory trusts: a file with the same size, modification time and inode, and the same sampled blocks
(the first, middle and last 4 KiB, hashed: `sample_hash`), is taken to hold the same bytes. Sizes, times and
inodes can be kept by a program that rewrites a file in place (or sets its time back): the sampled blocks,
read again on every use (12 KiB a file), catch such a change unless it lies only between the samples.

A pair is remembered as a 16-byte digest of its two paths, 48 bytes of their sizes, times and inodes and 32
of their sampled blocks (the app keeps them for the session: a fraction of tuples of paths). The file is data, never code: a magic number, a count, fixed-size records; one that
is not the user's own, or that others may write, is not read.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import threading
import time

import numpy as np

from dumptui.core.index.cache import RACY_SECONDS, cache_folder, enabled, inside, protected
from dumptui.core.io.safeio import check_regular, open_regular

BLOCK = 1 << 20  # bytes per read when streaming two files side by side
SAMPLE = 1 << 16  # bytes of each sampled block
CHECKED = 1 << 12  # bytes of each block hashed to check a remembered pair (3 a file: cheap on every use)
SAMPLED_FROM = 4 * BLOCK  # files at least this large are sampled before being streamed

FileKey = tuple[str, int, int, int]  # path, size, mtime_ns, inode
MAGIC = b"DTUI-SF3"  # the remembered pairs' file: MAGIC, a count, then the records
_STATS = struct.Struct("<6q")
RECORD = 16 + _STATS.size + 32  # pair digest, both files' stats, both files' sampled blocks
MAX_PAIRS = 10_000_000


def _key(path: str) -> FileKey | None:
    """None for anything but a regular file: two FIFOs or two links to /dev/zero have equal sizes (0) and
    would be read side by side forever."""
    try:
        st = check_regular(path)
    except OSError:
        return None
    return (path, st.st_size, st.st_mtime_ns, st.st_ino)


def _pair_digest(a: str, b: str) -> bytes:
    return hashlib.blake2b(f"{a}\0{b}".encode("utf-8", "surrogateescape"), digest_size=16).digest()


def _stat_bytes(ka: FileKey, kb: FileKey) -> bytes | None:
    try:
        return _STATS.pack(*ka[1:], *kb[1:])
    except struct.error:  # a number beyond 64 bits: such a pair is not remembered
        return None


def sample_hash(path: str, size: int) -> bytes:
    """16 bytes of the file's first, middle and last CHECKED bytes (all of a small file)."""
    h = hashlib.blake2b(digest_size=16)
    with open_regular(path) as fh:
        for start in sorted({0, max(0, size // 2 - CHECKED // 2), max(0, size - CHECKED)}):
            fh.seek(start)
            h.update(fh.read(min(CHECKED, size)))
    return h.digest()


def _blocks_equal(a: str, b: str, size: int) -> bool:
    """Sampled blocks (start, middle, end) first when the files are large, then everything (at most `size`
    bytes each: a file that grows meanwhile is not followed)."""
    with open_regular(a) as fa, open_regular(b) as fb:
        if size >= SAMPLED_FROM:
            for start in (0, (size - SAMPLE) // 2, size - SAMPLE):
                fa.seek(start)
                fb.seek(start)
                if fa.read(SAMPLE) != fb.read(SAMPLE):
                    return False
            fa.seek(0)
            fb.seek(0)
        left = size
        while left > 0:
            x = fa.read(min(BLOCK, left))
            if x != fb.read(min(BLOCK, left)) or not x:
                return False
            left -= len(x)
        return True


def same_payload(path: str, offset: int, payload: np.ndarray) -> bool:
    """Whether the regular file at `path` holds `payload` (bytes, as uint8) from `offset` to its end: a
    consumer's input against the bytes its producer's output was just read as (metrics.held_payload), so that
    only the one file is read. Streamed a block at a time, stopping at the first that differs; False when the
    file cannot be read."""
    try:
        with open_regular(path) as fh:
            if os.fstat(fh.fileno()).st_size != offset + payload.size:
                return False
            fh.seek(offset)
            block = np.empty(min(BLOCK, payload.size), np.uint8)
            done = 0
            while done < payload.size:
                want = min(BLOCK, payload.size - done)
                got = fh.readinto(block[:want].data)
                if got != want or not np.array_equal(block[:want], payload[done : done + want]):
                    return False
                done += want
            return True
    except OSError:
        return False


def same_bytes(a: str, b: str) -> bool:
    """Whether two regular files hold the same bytes (streamed side by side, sampled first when large; False
    when either cannot be read). Not remembered: for files of one dump read moments apart."""
    ka, kb = _key(a), _key(b)
    if ka is None or kb is None or ka[1] != kb[1]:
        return False
    try:
        return _blocks_equal(a, b, ka[1])
    except OSError:
        return False


class SameFiles:
    """Byte-identity of file pairs, remembered across runs for the pair of dumps (`ref_root`, `target_root`)
    when `remember` (and the cache is not switched off)."""

    def __init__(self, ref_root: str, target_root: str, remember: bool = False):
        self.remember = remember and enabled()
        self.roots = (os.path.abspath(ref_root), os.path.abspath(target_root))
        digest = hashlib.sha256(repr(self.roots).encode()).hexdigest()[:40]
        self.path = os.path.join(os.path.dirname(cache_folder()), "same-files", digest + ".pairs")
        self._known: dict[bytes, bytes] | None = None
        self._new = 0
        self._lock = threading.Lock()

    def _load(self) -> dict[bytes, bytes]:
        if self._known is None:
            known: dict[bytes, bytes] = {}
            if self.remember:
                try:
                    known = _read_pairs(self.path)
                except (OSError, ValueError):  # missing, damaged, foreign or of another version: nothing known
                    known = {}
            self._known = known
        return self._known

    def identical(self, a: str, b: str) -> bool | None:
        """True when byte-identical, False when not, None when either cannot be read."""
        ka, kb = _key(a), _key(b)
        if ka is None or kb is None:
            return None
        if ka[1] != kb[1]:
            return False
        digest, stats = _pair_digest(a, b), _stat_bytes(ka, kb)
        with self._lock:
            known = self._load().get(digest) if stats is not None else None
        try:
            if (
                known is not None
                and known[: _STATS.size] == stats
                and known[_STATS.size :] == sample_hash(a, ka[1]) + sample_hash(b, kb[1])
            ):
                return True  # and when a sample changed, the files are read again: they may differ now
            same = _blocks_equal(a, b, ka[1])
            racy = time.time_ns() - int(RACY_SECONDS * 1e9)
            if same and self.remember and stats is not None and ka[2] < racy and kb[2] < racy:
                samples = sample_hash(a, ka[1]) + sample_hash(b, kb[1])
                with self._lock:
                    self._load()[digest] = stats + samples
                    self._new += 1
        except OSError:
            return None
        return same

    def save(self) -> None:
        """Write what was learnt (never inside either dump; never raises: remembering is optional)."""
        if not self.remember or not self._new:
            return
        folder = os.path.dirname(self.path)
        if any(inside(folder, root) for root in self.roots) or protected(folder):
            return
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")  # mode 0600: the user's own
            try:
                with os.fdopen(fd, "wb") as fh, self._lock:
                    known = self._known or {}
                    fh.write(MAGIC + struct.pack("<Q", len(known)))
                    fh.write(b"".join(k + v for k, v in known.items()))
                os.replace(tmp, self.path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
            self._new = 0
        except OSError:
            pass


def _read_pairs(path: str) -> dict[bytes, bytes]:
    """The remembered pairs (ValueError when the file is not one of ours, or not the user's own)."""
    with open_regular(path) as fh:
        st = os.fstat(fh.fileno())
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            raise ValueError("a remembered-pairs file that is not the user's own, or that others may write")
        if fh.read(len(MAGIC)) != MAGIC:
            raise ValueError("not a remembered-pairs file of this version")
        (count,) = struct.unpack("<Q", fh.read(8))
        if count > MAX_PAIRS or st.st_size != len(MAGIC) + 8 + count * RECORD:
            raise ValueError("a damaged remembered-pairs file")
        data = fh.read(count * RECORD)
    return {data[i : i + 16]: data[i + 16 : i + RECORD] for i in range(0, len(data), RECORD)}
