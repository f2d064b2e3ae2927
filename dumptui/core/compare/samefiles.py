"""Are two dump files byte-identical? Cheaply: sizes first, then a few sampled blocks, then the whole files
streamed side by side (stopping at the first difference), and remembered.

The preconditions compare every weight and input pair of the two dumps before bisecting; on a clean pair they
are all equal, and a model's weights are most of its bytes. Sampling finds a differing pair after a few
blocks; an equal pair must be read whole once, in blocks (memory stays bounded), and is then remembered in
the user's cache folder by both files' path, size, modification time and inode, so the next run of the same
pair reads none of them. Only equal pairs are remembered, and only files unchanged for RACY_SECONDS.

A pair is remembered as a 16-byte digest of its two paths and 48 bytes of their sizes, times and inodes (the
app keeps them for the session: a model's 8,000 weight pairs took 6.6 MB as tuples of paths, 1.4 MB so).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import struct
import tempfile
import threading
import time

from dumptui.core.index.cache import RACY_SECONDS, cache_folder, enabled, inside
from dumptui.core.io.safeio import check_regular, open_regular

BLOCK = 1 << 20  # bytes per read when streaming two files side by side
SAMPLE = 1 << 16  # bytes of each sampled block
SAMPLED_FROM = 4 * BLOCK  # files at least this large are sampled before being streamed

FileKey = tuple[str, int, int, int]  # path, size, mtime_ns, inode
FORMAT = 2  # of the remembered pairs' file: {"format": FORMAT, "pairs": {pair digest: stat bytes}}
_STATS = struct.Struct("<6q")


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
                    with open(self.path, "rb") as fh:
                        loaded = pickle.load(fh)
                    if isinstance(loaded, dict) and loaded.get("format") == FORMAT:
                        known = loaded["pairs"]
                except Exception:  # missing, damaged or of another version: nothing is known yet
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
            if stats is not None and self._load().get(digest) == stats:
                return True
        try:
            same = _blocks_equal(a, b, ka[1])
        except OSError:
            return None
        racy = time.time_ns() - int(RACY_SECONDS * 1e9)
        if same and self.remember and stats is not None and ka[2] < racy and kb[2] < racy:
            with self._lock:
                self._load()[digest] = stats
                self._new += 1
        return same

    def save(self) -> None:
        """Write what was learnt (never inside either dump; never raises: remembering is optional)."""
        if not self.remember or not self._new:
            return
        folder = os.path.dirname(self.path)
        if any(inside(folder, root) for root in self.roots):
            return
        try:
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as fh, self._lock:
                    pickle.dump({"format": FORMAT, "pairs": self._known}, fh, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(tmp, self.path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
            self._new = 0
        except OSError:
            pass
