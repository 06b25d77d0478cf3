"""Reading IMAP answers as imaplib leaves them (the untagged data of a command, literals as tuples):
SEARCH, SORT, ESEARCH and THREAD answers, atoms and strings as text, PERMANENTFLAGS. Pure functions;
the wire (:mod:`.wire`) reads the lines, the plans read them with these."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterator
from typing import Any, TypeVar

from imapclient.imap_utf7 import decode as decode_utf7
from imapclient.response_parser import parse_response

T = TypeVar("T")


def search_uids(data: list[Any]) -> list[int]:
    """The UIDs of a SEARCH or SORT answer, in the server's order."""
    return [int(tok) for line in data if line for tok in line.split() if tok.isdigit()]


def search_count(data: list[Any]) -> int:
    """``COUNT n`` of an ESEARCH answer (0 when absent)."""
    for line in data:
        tokens = (line or b"").split()
        for key, value in itertools.pairwise(tokens):
            if key.upper() == b"COUNT":
                return int(value)
    return 0


def search_all_runs(data: list[Any]) -> list[tuple[int, int]]:
    """``ALL`` of an ESEARCH answer (a UID set such as ``1:5,8``) as ascending ``(first, last)`` runs,
    never expanded (empty when absent: no match)."""
    for line in data:
        tokens = (line or b"").split()
        for key, value in itertools.pairwise(tokens):
            if key.upper() == b"ALL":
                runs = []
                for part in value.split(b","):
                    first, _, last = part.partition(b":")
                    low, high = sorted((int(first), int(last or first)))
                    runs.append((low, high))
                return sorted(runs)
    return []


def uid_runs(uids: list[int]) -> tuple[int, list[tuple[int, int]]]:
    """The number of ``uids`` and their ascending ``(first, last)`` runs."""
    runs: list[tuple[int, int]] = []
    ordered = sorted(set(uids))
    for uid in ordered:
        if runs and runs[-1][1] == uid - 1:
            runs[-1] = (runs[-1][0], uid)
        else:
            runs.append((uid, uid))
    return len(ordered), runs


def as_text(value: bytes | str | None) -> str | None:
    """A response's atom or string as text (UTF-8, undecodable bytes replaced)."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def permanent_flags(value: Any) -> frozenset[str] | None:
    """The flags of a SELECT answer's ``PERMANENTFLAGS``; None when the server sent none."""
    if not isinstance(value, tuple):
        return None
    return frozenset(text for text in (as_text(v) for v in value if isinstance(v, bytes | str)) if text)


def thread_uids(data: list[Any]) -> list[list[int]]:
    """A THREAD answer as one sorted UID list per thread."""
    return [sorted(set(_leaves(tree, int))) for tree in parse_response([d for d in data if d])]


def opens_fetch_response(item: Any) -> bool:
    """Whether an element of imaplib's FETCH data opens a response (``<seq> (``), not a literal's tail."""
    head = item[0] if isinstance(item, tuple) else item
    return isinstance(head, bytes) and _FETCH_START.match(head) is not None


_FETCH_START = re.compile(rb"\d+ \(")


def response_bytes(item: Any) -> Iterator[bytes]:
    """The bytes of an untagged response, whose literals imaplib keeps as tuples."""
    return _leaves(item, bytes)


def _leaves(item: Any, kind: type[T]) -> Iterator[T]:
    """The values of type ``kind`` in nested tuples and lists (a parsed response), in order."""
    if isinstance(item, kind):
        yield item
    elif isinstance(item, tuple | list):
        for part in item:
            yield from _leaves(part, kind)


#: A mailbox name of a LIST or STATUS line without escapes or literals: quoted, or an atom that is not
#: NIL nor all digits (imapclient reads those as None and int: they take its parser).
_NAME = rb'(?:(?!"[0-9]+")"([^"\\]*)"|(?!(?:NIL|[0-9]+)(?: |$))([^\s"(){}%*\\\]]+))'
_FLAG = rb"\\?[^\s()\"\\{}%*\]]+"
_LIST_LINE = re.compile(rb"\(((?:" + _FLAG + rb"(?: " + _FLAG + rb')*)?)\) (?:"([^"\\])"|(NIL)) ' + _NAME)
_STATUS_LINE = re.compile(_NAME + rb" \(((?:[A-Za-z-]+ \d+(?: [A-Za-z-]+ \d+)*)?)\)")


def list_lines(lines: list[Any]) -> list[tuple[tuple[bytes, ...], bytes | None, bytes]] | None:
    """``(flags, delimiter, raw name)`` of untagged LIST lines of the usual shape, as imapclient's parser
    reads them (a name still modified UTF-7); None when any line is not of that shape (escapes,
    literals, a NIL or numeric name): then imapclient's parser reads them all. A LIST of every folder
    is read on each search of every folder, and imapclient's parser takes about 0.1 ms per line."""
    found = []
    for line in lines:
        if line in (b"", None):
            continue
        match = _LIST_LINE.fullmatch(line) if isinstance(line, bytes) else None
        if match is None:
            return None
        flags, delimiter, _, quoted, atom = match.groups()
        found.append((tuple(flags.split()), delimiter, quoted if quoted is not None else atom))
    return found


def status_lines(lines: list[Any]) -> list[tuple[bytes, dict[bytes, int]]] | None:
    """``(raw name, {item: number})`` of untagged STATUS lines of the usual shape (see
    :func:`list_lines`); None when any line is not of that shape."""
    found = []
    for line in lines:
        if not line:
            continue
        match = _STATUS_LINE.fullmatch(line) if isinstance(line, bytes) else None
        if match is None:
            return None
        quoted, atom, items = match.groups()
        words = items.split()
        pairs = {key: int(value) for key, value in zip(words[::2], words[1::2], strict=True)}
        found.append((quoted if quoted is not None else atom, pairs))
    return found


def response_values(lines: list[Any]) -> tuple[Any, ...]:
    """The values of untagged response lines as imapclient parses them (atoms as bytes, numbers as
    ints, lists as tuples)."""
    parsed: tuple[Any, ...] = tuple(parse_response([line for line in lines if line])) if lines else ()
    return parsed


def mailbox_name(raw: bytes | str) -> str:
    """A mailbox name as a server sends it (modified UTF-7, RFC 3501 5.1.3) as text."""
    return decode_name(raw) if isinstance(raw, bytes) else str(raw)


@functools.lru_cache(maxsize=4096)
def decode_name(raw: bytes) -> str:
    """A modified UTF-7 mailbox name decoded; kept, since the same names come back on every listing (a
    search's freshness check lists every folder twice over, LIST and STATUS, each time)."""
    decoded: str = decode_utf7(raw)
    return decoded
