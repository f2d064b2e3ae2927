"""Why a file (or a tensor in it) cannot be read, or was read differently from what it says: a code and its
values, never words.

The readers (io/, formats/, model/) set a tensor's `Layout.problem` / `Layout.repaired`, a `Problem`'s reason
and a refused file's reason to a `Fault`; `dumptui/report/reasons.py` is the one place that words it (with the
path beside it, as the views show it). It lives at the bottom of the engine so that io/ itself (below model/,
where `Reason` is) can say why a file is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dumptui.core.io.vocab import Word


class FileKind(Word):
    """What a path is when it is not a regular file."""

    FOLDER = "folder"
    FIFO = "fifo"
    CHAR_DEVICE = "character-device"
    BLOCK_DEVICE = "block-device"
    SOCKET = "socket"
    OTHER = "other"


class JsonPart(Word):
    """Which part of a JSON document a fault names (io/jsonstream.py)."""

    DOCUMENT = "document"  # the whole document (not an object)
    KEY = "key"  # a member's key
    MEMBER = "member"  # a top-level member, by its key
    RECORD = "record"  # a member of the object read one member at a time (msprobe's `data`), by its key


class Flaw(Word):
    """What a fault says; its values are in `Fault.args`, in the order report/reasons.py documents."""

    # an error's own text (the OS's strerror, a library's or a parser's message), said as it is
    TEXT = "text"  # (text)
    CANNOT_READ = "cannot-read"  # (the OS's text)
    READ_FAILED = "read-failed"  # (the error's text)
    NOT_FOUND = "not-found"  # ()
    PERMISSION_DENIED = "permission-denied"  # ()
    IS_A_DIRECTORY = "is-a-directory"  # ()
    # what a file is (io/safeio.py, formats/filecheck.py)
    NOT_REGULAR = "not-regular"  # (FileKind)
    SYMLINK_LOOP = "symlink-loop"  # ()
    LINK_LOOP = "link-loop"  # (): found while checking a dump's files
    LINK_TO_NOTHING = "link-to-nothing"  # ()
    LINK_UNFOLLOWED = "link-unfollowed"  # (the OS's text)
    LINK_TO_NOT_REGULAR = "link-to-not-regular"  # (FileKind)
    LINK_OUTSIDE = "link-outside"  # (target path)
    NOT_EXAMINED = "not-examined"  # (the OS's text)
    FOLDER_OUTSIDE = "folder-outside"  # (real path)
    # a tensor's payload against its header (io/npy.py)
    PAYLOAD_TWICE = "payload-twice"  # (declared, its bytes)
    F16_OVER_F32 = "f16-over-f32"  # (declared, its bytes, payload bytes): repaired, read as float32
    TRUNCATED = "truncated"  # (declared, its bytes, payload bytes)
    PAYLOAD_MISMATCH = "payload-mismatch"  # (payload bytes, declared, its bytes)
    # what a tensor's record says against its file (model/dump.py, formats/)
    DTYPE_DISAGREES = "dtype-disagrees"  # (dtype stored, dtype recorded)
    STATISTICS_ONLY = "statistics-only"  # ()
    FORTRAN_DEVICE_LAYOUT = "fortran-device-layout"  # (device format)
    SHAPE_DISAGREES = "shape-disagrees"  # (shape recorded in dump.json, shape the file holds)
    BAD_RECORD = "bad-record"  # (where, io, slot, the parser's text): a dump.json record with a bad value
    # MindSpore 1.x .bin files (formats/mindspore_bin.py)
    NO_STORAGE = "no-storage"  # (dtype)
    NAME_PAYLOAD_MISMATCH = "name-payload-mismatch"  # (payload bytes, declared, its bytes, whether truncated)
    NAME_NOT_READ = "name-not-read"  # (the parser's text)
    # torch.save files (formats/torchpt.py)
    PT_UNREADABLE = "pt-unreadable"  # (Fault of the error)
    TOO_DEEP = "too-deep"  # (error class name): nested or sized beyond what a tensor file holds
    PT_NO_PICKLE = "pt-no-pickle"  # ()
    PT_NOT_TENSOR = "pt-not-tensor"  # (type name)
    PT_COMPRESSED = "pt-compressed"  # ()
    PT_NON_CONTIGUOUS = "pt-non-contiguous"  # (strides)
    PT_STORAGE_SMALL = "pt-storage-small"  # ()
    PT_STORAGE_DECLARES = "pt-storage-declares"  # (bytes declared, bytes held)
    # CANN raw dump files (formats/cann_file.py, formats/cann_proto.py)
    DTYPE_NOT_DECODED = "dtype-not-decoded"  # (type name, or the DTYPE_UNSETTLED fault of its number)
    DTYPE_UNSETTLED = "dtype-unsettled"  # (type number): CANN releases disagree on types 28 and up
    RAW_PAYLOAD_MISMATCH = "raw-payload-mismatch"  # (payload bytes, declared, its bytes)
    SHORT_FOR_HEADER = "short-for-header"  # (file bytes)
    HEADER_TOO_LONG = "header-too-long"  # (header length, file bytes)
    RAW_SIZES_DISAGREE = "raw-sizes-disagree"  # (header bytes, payload bytes, total, file bytes)
    RAW_DATA_SIZE = "raw-data-size"  # (io, slot, bytes of data, size field)
    NOT_RAW_TOO_LARGE = "not-raw-too-large"  # (why not the current layout: a Fault)
    NOT_RAW = "not-raw"  # (why not the current layout: a Fault)
    # a folder that holds no dump (formats/registry.py)
    NO_DUMP_FOUND = "no-dump-found"  # (the readers' format names, in the order of READERS): what each expects
    # a file or record of a dump folder that is not used, or used with a caveat (formats/)
    FOREIGN_FILE = "foreign-file"  # (): no dump tensor file, ignored
    MISNAMED = "misnamed"  # (NamePattern the name does not follow)
    MIXED_RAW_FILE = "mixed-raw-file"  # (): a CANN raw file among MindSpore .npy files
    GRAPH_FILE_UNREADABLE = "graph-file-unreadable"  # (the parser's text)
    GRAPH_PB_NO_PROTOBUF = "graph-pb-no-protobuf"  # ()
    GRAPH_PB_UNREADABLE = "graph-pb-unreadable"  # (the parser's text)
    GE_GRAPH_UNREADABLE = "ge-graph-unreadable"  # (the parser's text)
    DUPLICATE_TENSOR = "duplicate-tensor"  # (io, slot, op name)
    ROWS_NOT_READ = "rows-not-read"  # (how many, the first three row faults)
    ROW_COLUMNS = "row-columns"  # (line, whether cut short (else too long), columns, columns of the header)
    ROW_BAD = "row-bad"  # (line, the parser's text)
    META_NOT_STRING = "meta-not-string"  # (key, its kind): a config.json field ignored
    PARAMETERS_NOT_OBJECT = "parameters-not-object"  # (module call, its kind)
    CALL_FIELD_NOT_LIST = "call-field-not-list"  # (field, call, its kind, its value in brief)
    ENTRY_TWICE = "entry-twice"  # (entry name, cut)
    ENTRY_NOT_OBJECT = "entry-not-object"  # (entry name)
    HEADER_NAMES_OTHER_OP = "header-names-other-op"  # (header's op name, file name's op name), both in brief
    NO_TENSORS = "no-tensors"  # (): a raw file whose header lists no input and no output
    # a JSON document read one member at a time (io/jsonstream.py)
    RECORD_TOO_LARGE = "record-too-large"  # (JsonPart, its key's repr or "", at character, the limit in bytes)
    # why a dump's index is not stored in the index cache (index/cache.py, formats/indexproc.py)
    CACHE_INSIDE_DUMP = "cache-inside-dump"  # (the cache folder)
    DUMP_TOO_RECENT = "dump-too-recent"  # (seconds): it changed less than that ago
    DUMP_NOT_LOOKED_AT = "dump-not-looked-at"  # (): the dump folder cannot be looked at
    NOT_CACHED = "not-cached"  # (error class name, the error's text): writing the entry failed
    NOT_STORED = "not-stored"  # (): a child process indexed it, and no current entry is there
    INDEXING_PROCESS_FAILED = "indexing-process-failed"  # (the error's text): a child process died


class NamePattern(Word):
    """The file-name pattern a format's tensor files follow (report/reasons.py spells it out)."""

    MINDSPORE_NPY = "mindspore-npy"
    MINDSPORE_BIN = "mindspore-bin"
    CANN_RAW = "cann-raw"
    CANN_RAW_UNMAPPED = "cann-raw-unmapped"  # a numeric name that mapping.csv does not hold either


@dataclass(frozen=True)
class Fault:
    """A code and the values it rests on: hashable and picklable (an index cache keeps them)."""

    code: Flaw
    args: tuple[object, ...] = ()

    def __str__(self) -> str:
        # a fault has no words of its own: an f-string or str() of one is a view that forgot to word it
        raise TypeError(f"a Fault ({self.code}) is worded by dumptui.report.reasons.say, not str()")

    def __format__(self, spec: str) -> str:
        raise TypeError(f"a Fault ({self.code}) is worded by dumptui.report.reasons.say, not format()")


def fault(code: Flaw, *args: object) -> Fault:
    return Fault(code, tuple(tuple(a) if isinstance(a, list) else a for a in args))


def text(message: object) -> Fault:
    """An error's own message (an exception, the OS), said as it is."""
    return Fault(Flaw.TEXT, (str(message),))


def error_fault(e: BaseException) -> Fault:
    """Why reading failed with `e`: a refused file's own fault, the OS's reason, or the error's text."""
    held = getattr(e, "fault", None)
    if isinstance(held, Fault):
        return held
    if isinstance(e, PermissionError):
        return Fault(Flaw.PERMISSION_DENIED)
    if isinstance(e, FileNotFoundError):
        return Fault(Flaw.NOT_FOUND)
    if isinstance(e, IsADirectoryError):
        return Fault(Flaw.IS_A_DIRECTORY)
    if isinstance(e, OSError) and e.strerror:
        return text(e.strerror)
    return text(str(e) or e.__class__.__name__)


def os_text(e: OSError) -> Fault:
    """An OSError as the readers said it (`e.strerror or e`), or a refused file's own fault."""
    held = getattr(e, "fault", None)
    if isinstance(held, Fault):
        return held
    return text(e.strerror or e)


# An exception that carries a fault (io/safeio.RefusedFile) is also an OSError whose text reaches whoever
# prints it (a side file refused in options/, the CLI's last resort). Its words are report/'s: report/reasons.py
# registers its wording here when it is imported (every CLI and app process imports it before reading a dump);
# a process that never imports it (a worker) records the fault itself, never this text.
_WORDING: list[Callable[[Fault], str]] = []  # report/'s say_fault, once registered


def set_wording(say: Callable[[Fault], str]) -> None:
    _WORDING[:] = [say]


def worded(f: Fault) -> str:
    """`f` in report/'s words once report/ is loaded, else its code and values (never shown by then)."""
    if _WORDING:
        return _WORDING[0](f)
    return f"{f.code.value} {f.args!r}" if f.args else f.code.value


class FaultError(ValueError):
    """A read refused for a known fault (a tensor whose layout says it cannot be read): `fault` says why."""

    def __init__(self, why: Fault):
        super().__init__(worded(why))
        self.fault = why


def of_error(e: BaseException) -> Fault:
    """`e` as `str(e)` says it, or the fault it carries."""
    held = getattr(e, "fault", None)
    return held if isinstance(held, Fault) else text(e)
