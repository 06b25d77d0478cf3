"""Message flags as sets: canonical spelling, what a change leads to, what PERMANENTFLAGS allows.

IMAP compares flags case-insensitively (RFC 3501 2.3.2); results keep one spelling of each.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from mail_imap_mcp.mail.write_errors import InvalidFlag
from mail_imap_mcp.mail.write_records import FlagOperation

if TYPE_CHECKING:
    from mail_imap_mcp.imap.view import MailboxState

#: The system flags an agent may set, in the order results list them.
SYSTEM_FLAGS = ("\\Seen", "\\Answered", "\\Flagged", "\\Draft")
_SYSTEM = {flag.lower(): flag for flag in SYSTEM_FLAGS}
#: Keywords: IMAP atoms from a conservative character set (what imap_search_messages' has_keyword takes).
#: At most 50 characters: Dovecot's default mail_max_keyword_length.
KEYWORD = re.compile(r"^[A-Za-z0-9$_.\-]{1,50}$")
DELETED = "\\deleted"
ALLOWED_FLAGS = (
    "the system flags \\Seen, \\Answered, \\Flagged and \\Draft, or keywords of 1 to 50 characters "
    "from A-Z a-z 0-9 $ _ . - (e.g. $Important, Work)"
)


def _shown(flag: str) -> str:
    return repr(flag if len(flag) <= 40 else flag[:40] + "...")


def parse_flags(flags: Sequence[str]) -> tuple[str, ...]:
    """The flags in canonical spelling, de-duplicated (case-insensitively, as IMAP compares them);
    :class:`InvalidFlag` for anything else (the registry names ``flags`` and says what is allowed)."""
    canonical: dict[str, str] = {}
    for flag in flags:
        key = flag.lower()
        if key in _SYSTEM:
            canonical.setdefault(key, _SYSTEM[key])
            continue
        if key == DELETED:
            problem = "\\Deleted is not set here: deleting is imap_apply_to_messages (action delete)"
        elif key == "\\recent":
            problem = "\\Recent is set by the server only"
        elif flag.startswith("\\"):
            problem = f"{_shown(flag)} is not a system flag this tool sets"
        elif key == "nil":
            problem = "NIL is not a usable keyword (IMAP reads it as 'nothing')"
        elif not KEYWORD.match(flag):
            problem = f"{_shown(flag)} is not a keyword"
        else:
            canonical.setdefault(key, flag)
            continue
        raise InvalidFlag(problem)
    return tuple(canonical.values())


def flag_keys(flags: Iterable[str]) -> set[str]:
    """The flags as IMAP compares them (lower case)."""
    return {flag.lower() for flag in flags}


def ordered(flags: Iterable[str]) -> list[str]:
    """System flags first (\\Seen, \\Answered, \\Flagged, \\Draft, \\Deleted...), then keywords by name."""
    unique: dict[str, str] = {}
    for flag in flags:
        unique.setdefault(flag.lower(), flag)
    rank = {key: index for index, key in enumerate(_SYSTEM)}
    return sorted(
        unique.values(), key=lambda f: (not f.startswith("\\"), rank.get(f.lower(), len(rank)), f.lower())
    )


def target_flags(operation: FlagOperation, requested: Sequence[str], before: Sequence[str]) -> list[str]:
    """What a message with ``before`` carries after ``operation`` with ``requested`` (replace keeps \\Deleted)."""
    if operation == "add":
        return ordered([*before, *requested])
    wanted = flag_keys(requested)
    if operation == "remove":
        return ordered(f for f in before if f.lower() not in wanted)
    return ordered([*requested, *(f for f in before if f.lower() == DELETED)])


def not_permitted(state: MailboxState, before: Sequence[str], after: Sequence[str]) -> list[str]:
    """The flags that would change from ``before`` to ``after`` but that the SELECT's PERMANENTFLAGS does
    not let a client change (a keyword is allowed when listed, or when ``\\*`` allows new ones)."""
    if state.permanent_flags is None:  # RFC 3501: no PERMANENTFLAGS, every flag is permanent
        return []
    allowed = flag_keys(state.permanent_flags)
    changing = flag_keys(before) ^ flag_keys(after)
    return ordered(
        flag
        for flag in [*before, *after]
        if flag.lower() in changing
        and flag.lower() not in allowed
        and (flag.startswith("\\") or "\\*" not in allowed)
    )
