"""What tests/integration/surface/test_imap_extensions.py shares with other test modules."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from tests.support.wire import Atom, Command, String, Token


def words(text: str) -> list[str]:
    return text.split()


#: Commands of IMAP4rev1 itself (``STARTTLS``/``AUTHENTICATE`` are checked against their capability).
BASE_COMMANDS = frozenset(
    words(
        "CAPABILITY NOOP LOGOUT LOGIN SELECT EXAMINE CREATE DELETE RENAME SUBSCRIBE UNSUBSCRIBE LIST LSUB "
        "STATUS APPEND CHECK CLOSE EXPUNGE SEARCH FETCH STORE COPY"
    )
) | {"UID SEARCH", "UID FETCH", "UID STORE", "UID COPY"}


#: Extension commands a read-only client might be tempted to use, and the capability each needs.
EXTENSION_COMMANDS = {
    "ID": "ID",
    "ENABLE": "ENABLE",
    "IDLE": "IDLE",
    "NAMESPACE": "NAMESPACE",
    "UNSELECT": "UNSELECT",
    "MOVE": "MOVE",
    "UID MOVE": "MOVE",
    "UID EXPUNGE": "UIDPLUS",
    "SORT": "SORT",
    "UID SORT": "SORT",
    "THREAD": "THREAD=",
    "UID THREAD": "THREAD=",
    "COMPRESS": "COMPRESS=DEFLATE",
    "XLIST": "XLIST",
    "NOTIFY": "NOTIFY",
    "ESEARCH": "MULTISEARCH",
    "GETQUOTA": "QUOTA",
    "GETQUOTAROOT": "QUOTA",
    "GETMETADATA": "METADATA",
    "STARTTLS": "STARTTLS",
}


STATUS_ITEMS = frozenset({"MESSAGES", "RECENT", "UIDNEXT", "UIDVALIDITY", "UNSEEN"})


EXTENSION_STATUS_ITEMS = {
    "SIZE": "STATUS=SIZE",
    "HIGHESTMODSEQ": "CONDSTORE",
    "APPENDLIMIT": "APPENDLIMIT",
    "MAILBOXID": "OBJECTID",
    "DELETED": "IMAP4REV2",
}


#: LIST-EXTENDED options (RFC 5258) that need a capability of their own.
EXTENSION_LIST_OPTIONS = {"SPECIAL-USE": "SPECIAL-USE", "STATUS": "LIST-STATUS"}


#: RFC 3501 search keys and how many arguments each takes (NOT and OR take search keys, counted as 0).
SEARCH_KEYS = {
    **dict.fromkeys(
        words(
            "ALL ANSWERED DELETED DRAFT FLAGGED NEW OLD RECENT SEEN UNANSWERED UNDELETED UNDRAFT "
            "UNFLAGGED UNSEEN NOT OR"
        ),
        0,
    ),
    **dict.fromkeys(
        words(
            "BCC BEFORE BODY CC FROM KEYWORD LARGER ON SENTBEFORE SENTON SENTSINCE SINCE SMALLER SUBJECT "
            "TEXT TO UID UNKEYWORD"
        ),
        1,
    ),
    "HEADER": 2,
}


#: Search keys of extensions (for a precise message; any other unknown key is reported as such).
EXTENSION_SEARCH_KEYS = {
    "MODSEQ": "CONDSTORE",
    "OLDER": "WITHIN",
    "YOUNGER": "WITHIN",
    "FUZZY": "SEARCH=FUZZY",
    "SAVEDBEFORE": "SAVEDATE",
    "SAVEDON": "SAVEDATE",
    "SAVEDSINCE": "SAVEDATE",
    "SAVEDATESUPPORTED": "SAVEDATE",
    "EMAILID": "OBJECTID",
    "THREADID": "OBJECTID",
    "FILTER": "FILTERS",
    "X-GM-RAW": "X-GM-EXT-1",
    "$": "SEARCHRES",
}


_FETCH_BASE = re.compile(
    r"^(ALL|FAST|FULL|UID|FLAGS|INTERNALDATE|ENVELOPE|BODYSTRUCTURE|BODY|RFC822(\.HEADER|\.SIZE|\.TEXT)?"
    r"|BODY(\.PEEK)?\[[^\]]*\](<\d+\.\d+>)?)$"
)


EXTENSION_FETCH_ITEMS = {
    "BINARY": "BINARY",
    "MODSEQ": "CONDSTORE",
    "PREVIEW": "PREVIEW",
    "SNIPPET": "SNIPPET=FUZZY",
    "EMAILID": "OBJECTID",
    "THREADID": "OBJECTID",
    "SAVEDATE": "SAVEDATE",
    "X-GM": "X-GM-EXT-1",
}


_SEQUENCE_SET = re.compile(r"^[0-9:*,]+$")


_LITERAL = re.compile(rb"\{(\d+)(\+?)\}\r\n")


@dataclass(frozen=True)
class Requirement:
    capability: str  # a name ("ESEARCH"), or a prefix ending in "=" ("THREAD=")
    what: str  # the offending bytes, for the failure message


def literals(raw: bytes) -> list[tuple[int, bool]]:
    """(size, non-synchronising) of every literal in one command's bytes, skipping literal contents.

    A quoted string cannot hold CR/LF, so ``{n}`` followed by CRLF outside a literal is an announcement.
    """
    found = []
    pos = 0
    while match := _LITERAL.search(raw, pos):
        size = int(match.group(1))
        found.append((size, bool(match.group(2))))
        pos = match.end() + size
    return found


def _flatten(tokens: list[Token]) -> Iterator[Atom | String]:
    for token in tokens:
        if isinstance(token, list):
            yield from _flatten(token)
        else:
            yield token


def _search_requirements(args: list[Token], what: str) -> list[Requirement]:
    needs: list[Requirement] = []
    tokens = list(args)
    if tokens and isinstance(tokens[0], Atom) and tokens[0].text.upper() == "RETURN":
        needs.append(Requirement("ESEARCH", what))
        tokens = tokens[2:]
    if tokens and isinstance(tokens[0], Atom) and tokens[0].text.upper() == "CHARSET":
        tokens = tokens[2:]  # CHARSET is IMAP4rev1 (a refusal is BADCHARSET, which the tools handle)

    def walk(items: list[Token]) -> None:
        index = 0
        while index < len(items):
            token = items[index]
            index += 1
            if isinstance(token, list):
                walk(token)
                continue
            if isinstance(token, String):
                needs.append(Requirement("?", f"a string where a search key belongs in {what}"))
                continue
            key = token.text.upper()
            if key in SEARCH_KEYS:
                index += SEARCH_KEYS[key]
            elif _SEQUENCE_SET.match(key):
                pass
            else:
                needs.append(Requirement(EXTENSION_SEARCH_KEYS.get(key, f"unknown search key {key}"), what))

    walk(tokens)
    return needs


def _fetch_requirements(args: list[Token], what: str) -> list[Requirement]:
    needs: list[Requirement] = []
    if len(args) > 2:
        needs.append(Requirement("CONDSTORE", f"FETCH modifiers in {what}"))  # e.g. (CHANGEDSINCE n)
        modifiers = {t.text.upper() for t in _flatten(args[2:]) if isinstance(t, Atom)}
        if "VANISHED" in modifiers:
            needs.append(Requirement("QRESYNC", f"FETCH modifiers in {what}"))  # (CHANGEDSINCE n VANISHED)
    for item in _flatten(args[1:2]):
        text = item.text.upper() if isinstance(item, Atom) else "<string>"
        if _FETCH_BASE.match(text):
            continue
        capability = next((c for p, c in EXTENSION_FETCH_ITEMS.items() if text.startswith(p)), None)
        needs.append(Requirement(capability or f"unknown FETCH item {text}", what))
    return needs


def extension_requirements(commands: list[Command]) -> list[Requirement]:
    """Every capability beyond IMAP4rev1 that ``commands`` rely on, one entry per use."""
    needs: list[Requirement] = []
    for command in commands:
        what = command.raw[:160].decode("ascii", "replace")
        verb, args = command.verb, command.args
        for size, non_sync in literals(command.raw):
            if non_sync:
                needs.append(Requirement("LITERAL+" if size > 4096 else "LITERAL-", what))
        if verb not in BASE_COMMANDS and verb != "AUTHENTICATE":
            needs.append(Requirement(EXTENSION_COMMANDS.get(verb, f"unknown command {verb}"), what))
            if verb == "ENABLE":  # each extension enabled must be advertised too (RFC 5161)
                needs += [Requirement(a.text.upper(), what) for a in args if isinstance(a, Atom)]
        elif verb == "AUTHENTICATE":
            mechanism = args[0].text.upper() if args and isinstance(args[0], Atom) else "?"
            needs.append(Requirement(f"AUTH={mechanism}", what))
            if len(args) > 1:
                needs.append(Requirement("SASL-IR", what))
        elif verb == "LIST" and (len(args) != 2 or any(isinstance(a, list) for a in args)):
            needs.append(Requirement("LIST-EXTENDED", what))  # selection options or RETURN (...)
            texts = {t.text.upper() for t in _flatten(args) if isinstance(t, Atom)}
            needs += [Requirement(c, what) for o, c in EXTENSION_LIST_OPTIONS.items() if o in texts]
        elif verb in ("SELECT", "EXAMINE") and len(args) != 1:
            needs.append(Requirement("CONDSTORE", what))  # (CONDSTORE) or (QRESYNC ...)
        elif verb == "STATUS":
            items = {t.text.upper() for t in _flatten(args[1:]) if isinstance(t, Atom)}
            needs += [
                Requirement(EXTENSION_STATUS_ITEMS.get(item, f"unknown STATUS item {item}"), what)
                for item in sorted(items - STATUS_ITEMS)
            ]
        elif verb in ("SEARCH", "UID SEARCH"):
            needs += _search_requirements(args, what)
        elif verb in ("FETCH", "UID FETCH"):
            needs += _fetch_requirements(args, what)
        if verb in ("SELECT", "EXAMINE", "STATUS", "LIST", "LSUB"):
            # Mailbox names go as modified UTF-7; raw 8-bit names need UTF8=ACCEPT (RFC 6855).
            for token in _flatten(args):
                if isinstance(token, String) and not token.value.isascii():
                    needs.append(Requirement("UTF8=ACCEPT", what))
    return needs


def unadvertised(needs: list[Requirement], capabilities: frozenset[str]) -> list[Requirement]:
    def offered(capability: str) -> bool:
        if capability == "LITERAL-":
            return bool({"LITERAL-", "LITERAL+"} & capabilities)
        if capability.endswith("="):
            return any(c.startswith(capability) for c in capabilities)
        return capability in capabilities

    return [need for need in needs if not offered(need.capability)]
