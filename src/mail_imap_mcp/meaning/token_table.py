"""The multilingual model's table of token vectors (:mod:`.multilingual`: 128k tokens of 512 one-byte
values, 65 MB), kept unpacked in a file of the user's cache directory and read from it a row at a time as
tokens are met, so that it is not the process's memory (issue 90: memory for a million messages).

The package ships the table as 17 arrays ``q1``..``q17`` in ``weights.npz``, members of a zip that are
deflated, so they cannot be read in place. The first read unpacks them, one after the other, into
``<cache>/models/<model>-table-<digest>.u8`` (:func:`cache_dir`: ``~/.cache/mail-imap-mcp/models`` on
Linux; ``digest`` names the members' checksums and sizes in the zip, so two installs of two versions keep
two files), and the read that writes it uses those bytes as written; each later read opens it. The file is trusted only when it holds exactly the members' bytes:
its size, then each member's CRC-32 as the zip records it, over the member's own ``.npy`` header (read
from the zip) and the file's bytes of it. A file cut short, damaged or of another version is made again
(written beside it, then renamed over it: a process that has the old one open keeps reading it); where
the directory cannot be made or written, the table is held in memory as before, with a warning. Nothing
but bytes is read from the file: it holds no header to trust.

Its rows are read as tokens are met (:class:`FileRows`), the first :data:`KEPT_ROWS` tokens' kept in
memory (2 MiB at most): not mapped, as the kernel may map a whole large folio of a mapped file for one
row touched (Linux 6.18 on ext4 mapped the whole table after 2,000 messages, scripts/bench_model_memory.py)."""

from __future__ import annotations

import hashlib
import io
import logging
import os
import tempfile
import threading
import zipfile
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from mail_imap_mcp.meaning.unavailable import MeaningUnavailable, fatal

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

#: Bytes read at once when a file is checked.
_BLOCK = 1 << 20
#: Tokens whose rows :class:`FileRows` keeps in memory once read (512 bytes a row: more tokens than the
#: model keeps its values of, ``multilingual.KEPT_TOKENS``, as a row is read for every token of a batch).
KEPT_ROWS = 4_096


def keep_first(
    slots: npt.NDArray[Any],
    kept: npt.NDArray[Any],
    count: int,
    tokens: npt.NDArray[np.int64],
    made: npt.NDArray[Any],
) -> int:
    """Keep the values ``made`` of ``tokens`` (distinct, none kept yet) in the rows of ``kept`` from
    ``count`` on, as many as are free, each token's row in ``slots``; the rows in use then."""
    import numpy as np

    keep = min(len(tokens), len(kept) - count)
    if keep:
        kept[count : count + keep] = made[:keep]
        slots[tokens[:keep]] = np.arange(count, count + keep, dtype=np.int32)
    return count + keep


class MemoryRows:
    """The rows of a table held in memory, by token id (token t: row t // chunks of chunk t % chunks)."""

    def __init__(self, table: npt.NDArray[np.uint8]) -> None:
        self.table = table

    def __call__(self, tokens: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
        chunks = self.table.shape[0]
        rows: npt.NDArray[np.uint8] = self.table[tokens % chunks, tokens // chunks]
        return rows

    def rest(self) -> None:
        """Nothing to let go: the table is the process's whole."""


class FileRows:
    """The rows of the table in the cache file (checked), read by token id as asked, the first
    :data:`KEPT_ROWS` tokens' kept (never replaced; one reader of the file at a time)."""

    def __init__(self, file: io.FileIO, full: tuple[int, ...]) -> None:
        self._file = file
        self._chunks, self._rows, self._width = full
        self._kept = self._empty()
        self._lock = threading.Lock()

    def __call__(self, tokens: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
        import numpy as np

        kept = self._kept  # one table throughout, whatever :meth:`rest` does meanwhile
        slots = kept.slot[tokens]
        if slots.min() < 0:
            with self._lock:
                slots = kept.slot[tokens]
                missing = np.unique(tokens[slots < 0])
                read = self._read(missing)
                kept.count = keep_first(kept.slot, kept.values[:KEPT_ROWS], kept.count, missing, read)
                slots = kept.slot[tokens]
            if slots.min() < 0:  # the kept rows are full: the others are taken from what was read
                rows = np.empty((len(tokens), self._width), dtype=np.uint8)
                found = slots >= 0
                rows[found] = kept.values[slots[found]]
                rows[~found] = read[np.searchsorted(missing, tokens[~found])]
                return rows
        found_rows: npt.NDArray[np.uint8] = kept.values[slots]
        return found_rows

    def rest(self) -> None:
        """Let go of the rows kept (they are read again from the file as tokens are met)."""
        self._kept = self._empty()

    def _empty(self) -> Kept:
        import numpy as np

        return Kept(self._chunks * self._rows, KEPT_ROWS, self._width, np.uint8)

    def _read(self, tokens: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
        import numpy as np

        read = np.empty((len(tokens), self._width), dtype=np.uint8)
        for at, token in enumerate(tokens.tolist()):
            row, chunk = divmod(token, self._chunks)
            self._file.seek((chunk * self._rows + row) * self._width)
            if self._file.readinto(read[at].data) != self._width:
                raise OSError(f"{self._file.name} was cut short while read")
        return read


class Kept:
    """Values kept by token id (the table's rows here, a token's values in :mod:`.multilingual`):
    each token's slot (-1: not kept), the values filled in the order tokens are first met and never
    replaced (their memory taken as they are filled: :func:`keep_first`), and how many are. Made again
    empty to let them go: the values are an anonymous mapping of their own, so that the memory goes back
    to the system when they are let go (from malloc, glibc kept the 32 MiB of a full model's in its heap
    once it had raised its mapping threshold, and the process did not shrink: scripts/bench_model_memory.py
    ``--texts varied``)."""

    def __init__(self, tokens: int, size: int, width: int, dtype: Any) -> None:
        import mmap

        import numpy as np

        self.slot: npt.NDArray[np.signedinteger[Any]] = np.full(
            tokens, -1, dtype=np.int16 if size < 1 << 15 else np.int32
        )
        made = np.dtype(dtype)
        size_bytes = max(1, size * width * made.itemsize)
        if hasattr(mmap, "MAP_PRIVATE"):  # a private mapping: memory of the process's own (shared on Windows)
            pages = mmap.mmap(-1, size_bytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        else:
            pages = mmap.mmap(-1, size_bytes)
        self.values: npt.NDArray[Any] = np.frombuffer(pages, dtype=made, count=size * width).reshape(
            size, width
        )
        self.count = 0


class Member(NamedTuple):
    """One array of the table as the zip holds it: its ``.npy`` header, and the zip's record of it."""

    name: str
    header: bytes
    crc: int
    size: int


def cache_dir() -> Path:
    """Where the unpacked table is kept: the platform's user cache directory for the server."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("mail-imap-mcp", appauthor=False)) / "models"


def token_table(
    weights: Path,
    names: Sequence[str],
    shape: tuple[int, int],
    model: str,
    unusable: Callable[[str], MeaningUnavailable],
) -> MemoryRows | FileRows:
    """The rows of the arrays ``names`` of ``weights`` (each one-byte, of ``shape``) one after the other
    (``len(names)`` chunks), by token id: read from the cache file when it holds them or can be made to,
    else from memory."""
    members = _members(weights, names, shape, unusable)
    digest = hashlib.sha256(repr([(m.name, m.crc, m.size) for m in members]).encode()).hexdigest()[:16]
    path = cache_dir() / f"{model}-table-{digest}.u8"
    full = (len(names), *shape)
    opened = _opened(path, members, full)
    if opened is not None:
        return opened
    table = _unpacked(weights, names, full, unusable)
    try:
        _write(path, table)
        file = path.open("rb", buffering=0)
    except OSError as error:
        log.warning(
            "the multilingual model's token table cannot be kept in %s (%s): it is held in memory (+%d MiB)",
            path.parent,
            error,
            table.nbytes >> 20,
        )
        return MemoryRows(table)
    return FileRows(file, full)  # the bytes just written from the checked members: not read again


def _members(
    weights: Path, names: Sequence[str], shape: tuple[int, int], unusable: Callable[[str], MeaningUnavailable]
) -> list[Member]:
    """Each array's ``.npy`` header and the zip's record of it, read without unpacking its values: the
    header must say one byte a value, C order, ``shape``, and the member be that header and those bytes."""
    import numpy as np
    from numpy.lib import format as npy

    data = shape[0] * shape[1]
    found: list[Member] = []
    try:
        with zipfile.ZipFile(weights) as archive:
            for name in names:
                info = archive.getinfo(f"{name}.npy")
                with archive.open(info) as member:
                    header = member.read(max(0, info.file_size - data))
                stream = io.BytesIO(header)
                version = npy.read_magic(stream)
                read_header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
                given, fortran, dtype = read_header(stream)
                if dtype != np.dtype(np.uint8) or tuple(given) != shape or fortran:
                    raise unusable(f"its array {name} is {dtype} {tuple(given)}, not uint8 {shape}")
                if stream.tell() != len(header) or info.file_size != len(header) + data:
                    raise unusable(f"its array {name} is not {data} bytes after its header")
                found.append(Member(name, header, info.CRC, info.file_size))
    except MeaningUnavailable:
        raise
    except BaseException as error:  # no zip, a member missing (KeyError), a header of another format...
        fatal(error)
        raise unusable(f"{weights.name} cannot be read: {type(error).__name__}: {error}") from error
    return found


def _unpacked(
    weights: Path,
    names: Sequence[str],
    full: tuple[int, ...],
    unusable: Callable[[str], MeaningUnavailable],
) -> npt.NDArray[np.uint8]:
    """The arrays read from the zip (never unpickling: each was found one-byte by :func:`_members`)."""
    import numpy as np

    table = np.empty(full, dtype=np.uint8)
    try:
        with np.load(weights, allow_pickle=False) as archive:
            for at, name in enumerate(names):
                table[at] = archive[name]
    except BaseException as error:
        fatal(error)
        raise unusable(f"{weights.name} cannot be read: {type(error).__name__}: {error}") from error
    return table


def _write(path: Path, table: npt.NDArray[np.uint8]) -> None:
    """``table``'s bytes into ``path``, written beside it then renamed over it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            table.tofile(out)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _opened(path: Path, members: Sequence[Member], full: tuple[int, ...]) -> FileRows | None:
    """The rows of ``path`` when it holds exactly the members' bytes; None when it is missing, or of
    another size or content, or cannot be read (said in the log)."""
    why: str | None
    try:
        file = path.open("rb", buffering=0)
    except FileNotFoundError:
        return None
    except OSError as error:
        why = f"{type(error).__name__}: {error}"
    else:
        try:
            why = _unlike(file, members)
        except OSError as error:
            why = f"{type(error).__name__}: {error}"
        if why is None:
            return FileRows(file, full)
        file.close()
    log.warning("the multilingual model's token table %s is not used (%s): it is made again", path, why)
    return None


def _unlike(file: io.FileIO, members: Sequence[Member]) -> str | None:
    """What makes ``file`` other than the members' bytes one after the other (None: nothing)."""
    size = os.fstat(file.fileno()).st_size
    wanted = sum(member.size - len(member.header) for member in members)
    if size != wanted:
        return f"{size} bytes, not {wanted}"
    buffer = bytearray(_BLOCK)
    view = memoryview(buffer)
    for member in members:
        crc = zlib.crc32(member.header)
        left = member.size - len(member.header)
        while left:
            read = file.readinto(view[: min(left, _BLOCK)])
            if not read:
                return "cut short while read"
            crc = zlib.crc32(view[:read], crc)
            left -= read
        if crc != member.crc:
            return f"its bytes of {member.name} differ from the package's"
    return None
