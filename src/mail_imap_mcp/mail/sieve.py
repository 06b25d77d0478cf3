"""Rules as the server keeps them, whatever the protocol: an account's Sieve scripts (RFC 5228), which
one is active, and what the server's Sieve offers, behind the :class:`SieveScripts` Protocol that a
ManageSieve session (``managesieve/``) implements, and the tests' in-memory fake beside it.

A script's name and text are checked here before anything is sent (:func:`check_script_name`,
:func:`check_script_text`), so every implementation refuses the same hostile input the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from mail_imap_mcp.mail.sieve_errors import ScriptNameInvalid, ScriptTextInvalid

#: The longest script name sent, in bytes of UTF-8 (RFC 5804 leaves it to the server; Pigeonhole keeps a
#: script as the file ``<name>.sieve``, and a name of 250 bytes fails there with an internal error).
MAX_NAME_BYTES = 200
#: The largest script sent or read, in bytes of UTF-8 (a server's own limit is usually far lower).
MAX_SCRIPT_BYTES = 1_000_000


@dataclass(frozen=True)
class ScriptEntry:
    """One script of the account's listing, and whether it is the active one (at most one is)."""

    name: str
    active: bool = False


@dataclass(frozen=True)
class SieveCapabilities:
    """What the server's ManageSieve said it offers (RFC 5804 1.7), as it said it."""

    implementation: str = ""
    #: The ``SIEVE`` capability: the extensions a script may ``require`` (lower case).
    extensions: frozenset[str] = frozenset()
    #: SASL mechanisms offered (upper case), after STARTTLS where there was one.
    sasl: tuple[str, ...] = ()
    starttls: bool = False
    #: ``VERSION`` (an RFC 5804 server): CHECKSCRIPT, RENAMESCRIPT and NOOP are there only with it.
    version: str | None = None
    max_redirects: int | None = None
    #: ``NOTIFY``'s methods (``mailto``...), for ``enotify``.
    notify: tuple[str, ...] = ()
    #: Every capability line, its name upper-cased, as the server wrote its value.
    raw: Mapping[str, str] = field(default_factory=dict)

    def offers(self, extension: str) -> bool:
        """Whether a script may ``require`` ``extension`` here."""
        return extension.lower() in self.extensions

    @property
    def checks_and_renames(self) -> bool:
        """Whether CHECKSCRIPT and RENAMESCRIPT exist (RFC 5804's ``VERSION``)."""
        return self.version is not None


class SieveScripts(Protocol):
    """An account's Sieve scripts on its server. Refusals are :mod:`~mail_imap_mcp.mail.sieve_errors`
    carrying the server's own words; a script's text is given and returned exactly as stored."""

    def capabilities(self) -> SieveCapabilities: ...

    def list_scripts(self) -> list[ScriptEntry]: ...

    def get_script(self, name: str) -> str: ...

    def list_and_get(self, names: Sequence[str]) -> tuple[list[ScriptEntry], dict[str, str]]:
        """:meth:`list_scripts` and the text of each of ``names`` the server has (one missing is left
        out), in one round trip where the protocol allows it."""
        ...

    def put_script(self, name: str, text: str) -> str:
        """Store ``text`` as ``name`` (replacing one of that name, active or not); the server's warnings
        (RFC 5804 ``WARNINGS``), or ``""``."""
        ...

    def check_script(self, text: str) -> str:
        """Whether the server would take ``text`` (nothing stored): its warnings, or ``""``; a refusal is
        :class:`~mail_imap_mcp.mail.sieve_errors.ScriptRefused` with its verdict."""
        ...

    def activate(self, name: str) -> None: ...

    def deactivate(self) -> None: ...

    def delete_script(self, name: str) -> None: ...

    def rename_script(self, name: str, new_name: str) -> None: ...

    def have_space(self, name: str, size: int) -> None:
        """Nothing when a script of ``size`` bytes named ``name`` fits the account's quota, else
        :class:`~mail_imap_mcp.mail.sieve_errors.SieveQuotaExceeded`."""
        ...


def _control(char: str) -> bool:
    code = ord(char)
    return code < 0x20 or 0x7F <= code <= 0x9F or code in (0x2028, 0x2029)


def check_script_name(name: str, parameter: str = "name") -> str:
    """``name`` when RFC 5804 allows it as a script name (1.6: no control characters, no line or
    paragraph separators), it is no longer than :data:`MAX_NAME_BYTES` and no path (no ``/``, not ``.``
    or ``..``); else :class:`ScriptNameInvalid` naming the problem."""
    if not name:
        raise ScriptNameInvalid(name, "is empty", parameter)
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        raise ScriptNameInvalid(name, f"is longer than {MAX_NAME_BYTES} bytes", parameter)
    bad = next((char for char in name if _control(char)), None)
    if bad is not None:
        raise ScriptNameInvalid(name, f"holds the control character U+{ord(bad):04X}", parameter)
    if "/" in name or name in (".", ".."):
        raise ScriptNameInvalid(name, "is a path (a name holds no '/' and is not '.' or '..')", parameter)
    return name


def check_script_text(text: str, parameter: str = "script") -> bytes:
    """``text`` as the bytes sent (UTF-8), when it holds no NUL and fits :data:`MAX_SCRIPT_BYTES`; else
    :class:`ScriptTextInvalid` naming the problem."""
    if "\0" in text:
        raise ScriptTextInvalid(f"holds a NUL character (at {text.index(chr(0))})", parameter)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ScriptTextInvalid(f"is not valid Unicode at {exc.start}", parameter) from None
    if len(data) > MAX_SCRIPT_BYTES:
        raise ScriptTextInvalid(f"is {len(data)} bytes, more than {MAX_SCRIPT_BYTES}", parameter)
    return data


__all__ = [
    "MAX_NAME_BYTES",
    "MAX_SCRIPT_BYTES",
    "ScriptEntry",
    "SieveCapabilities",
    "SieveScripts",
    "check_script_name",
    "check_script_text",
]
