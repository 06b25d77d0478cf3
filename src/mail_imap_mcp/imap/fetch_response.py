"""FETCH answers parsed as imapclient parses them, a token at a time instead of a byte at a time.

imapclient's ``parse_fetch_response`` lexes every byte of a FETCH line in Python (its lexer iterates
over the line's bytes and appends them one by one), which is most of the CPU a page of 20 summaries
costs before a header is read (a BODYSTRUCTURE is hundreds of bytes of quoted strings). Here one
regular expression finds each token, for the answers servers send: parentheses, quoted strings
(backslash escapes as imapclient reads them), atoms (with ``[...]`` sections, e.g.
``BODY[HEADER.FIELDS (FROM)]<0>``), ``NIL``, numbers and ``{n}`` literals. The tokens become the
values imapclient builds (the same nested tuples, bytes, ints and ``None``), and each message's items
are converted by imapclient's own code (INTERNALDATE, ENVELOPE, BODYSTRUCTURE), so the result is
equal to imapclient's. Anything else (a byte imapclient's lexer treats apart, such as ``%`` or a
control character, a quote inside an atom, an unclosed string, section or list, a literal marker
without its literal, a response that is not ``<number> (<items>)``) is left to imapclient's parser,
which answers it, or raises, as before.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from imapclient.response_parser import _convert_ENVELOPE, _convert_INTERNALDATE
from imapclient.response_parser import parse_fetch_response as _imapclient_parse_fetch_response
from imapclient.response_types import BodyData

# After optional whitespace (imapclient's: space, tab, CR, LF), a token: "(", ")", a quoted string, or
# an atom of imapclient's word bytes (not a control byte, space, "(", ")", "%", '"' or "[") and
# bracketed sections, which imapclient reads up to the first "]" whatever they hold, that ends where
# imapclient ends it (at whitespace, a parenthesis or the end of the line); or else any other byte,
# where imapclient's lexer reads differently (or fails).
_TOKENS = re.compile(
    rb'[ \t\r\n]*(?:(\(|\)|"(?:[^"\\]|\\.)*"|(?:[^\x00-\x20()%"\[]|\[[^\]]*\])+(?=[ \t\r\n()]|\Z))|(.))',
    re.DOTALL,
)
_OPEN, _CLOSE, _QUOTE, _BRACE = b'()"{'
#: imapclient drops the backslash of ``\\`` and ``\"`` in a quoted string and keeps any other.
_ESCAPED = re.compile(rb'\\([\\"])')
_LITERAL = re.compile(rb"\{([0-9]+)\}")


def parse_fetch_response(
    text: list[Any], normalise_times: bool = True, uid_is_key: bool = True
) -> defaultdict[int, dict[bytes, Any]]:
    """imapclient's ``parse_fetch_response`` of ``text`` (imaplib's FETCH data), equal in result."""
    values = _values(text)
    if values is None or len(values) % 2:
        return _imapclient(text, normalise_times, uid_is_key)
    parsed: defaultdict[int, dict[bytes, Any]] = defaultdict(dict)
    for index in range(0, len(values), 2):
        seq, items = values[index], values[index + 1]
        if type(seq) is not int or type(items) is not tuple or len(items) % 2:
            return _imapclient(text, normalise_times, uid_is_key)
        msg_id = seq
        msg_data: dict[bytes, Any] = {b"SEQ": seq}
        for position in range(0, len(items), 2):
            name, value = items[position], items[position + 1]
            if type(name) is not bytes:
                return _imapclient(text, normalise_times, uid_is_key)
            word = name.upper()
            if word == b"UID":
                if type(value) is not int:
                    return _imapclient(text, normalise_times, uid_is_key)
                if uid_is_key:
                    msg_id = value
                else:
                    msg_data[word] = value
            elif word == b"INTERNALDATE":
                msg_data[word] = _convert_INTERNALDATE(value, normalise_times)
            elif word == b"ENVELOPE":
                msg_data[word] = _convert_ENVELOPE(value, normalise_times)
            elif word in (b"BODY", b"BODYSTRUCTURE"):
                msg_data[word] = BodyData.create(value)
            else:
                msg_data[word] = value
        parsed[msg_id].update(msg_data)
    return parsed


def _imapclient(
    text: list[Any], normalise_times: bool, uid_is_key: bool
) -> defaultdict[int, dict[bytes, Any]]:
    parsed: defaultdict[int, dict[bytes, Any]] = _imapclient_parse_fetch_response(
        text, normalise_times, uid_is_key
    )
    return parsed


def _values(text: list[Any]) -> list[Any] | None:
    """The top-level values of ``text`` as imapclient's ``gen_parsed_response`` yields them, or None
    where its lexer would read a byte differently (or fail)."""
    out: list[Any] = []
    current = out
    open_lists: list[list[Any]] = []
    for chunk in text:
        if type(chunk) is tuple and len(chunk) == 2 and type(chunk[0]) is bytes and type(chunk[1]) is bytes:
            line, literal = chunk
            if not line.endswith(b"}"):
                return None
        elif type(chunk) is bytes:
            line, literal = chunk, None
        else:
            return None
        for token, stray in _TOKENS.findall(line):
            if stray:
                return None
            first = token[0]
            if first == _OPEN:
                open_lists.append(current)
                current = []
            elif first == _CLOSE:
                if not open_lists:
                    return None
                finished = tuple(current)
                current = open_lists.pop()
                current.append(finished)
            elif first == _QUOTE:
                quoted = token[1:-1]
                current.append(_ESCAPED.sub(rb"\1", quoted) if b"\\" in quoted else quoted)
            elif token == b"NIL":
                current.append(None)
            elif first == _BRACE:
                length = _LITERAL.fullmatch(token)
                if literal is None or length is None or int(length[1]) != len(literal):
                    return None
                current.append(literal)
            elif token.isdigit() and (first != 48 or len(token) == 1):  # no leading "0", as imapclient
                current.append(int(token))
            else:
                current.append(token)
    return None if open_lists else out
