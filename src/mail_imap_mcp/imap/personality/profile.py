"""A server's extensions as named facts, from its CAPABILITY answer (RFC 9051 7.2.2)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    """What one logged-in connection's server offers (capability names upper-case, as imapclient gives
    them); each fact says which extension it stands for."""

    capabilities: frozenset[str]

    @classmethod
    def of(cls, names: Iterable[str | bytes]) -> Profile:
        """The profile of capability names as a server sent them (any case, text or bytes)."""
        return cls(
            frozenset((n.decode("ascii", "replace") if isinstance(n, bytes) else n).upper() for n in names)
        )

    def _has(self, *names: str) -> bool:
        return all(name in self.capabilities for name in names)

    @property
    def starttls(self) -> bool:
        """``STARTTLS`` before login (RFC 9051 6.2.1)."""
        return self._has("STARTTLS")

    @property
    def login_disabled(self) -> bool:
        """``LOGINDISABLED``: the server refuses LOGIN on this connection."""
        return self._has("LOGINDISABLED")

    @property
    def mechanisms(self) -> frozenset[str]:
        """The SASL mechanisms ``AUTHENTICATE`` takes, as ``AUTH=`` names them (``XOAUTH2``, ``PLAIN``...;
        upper case, without the prefix; RFC 9051 6.2.2)."""
        return frozenset(name.removeprefix("AUTH=") for name in self.capabilities if name.startswith("AUTH="))

    def offers_mechanism(self, mechanism: str) -> bool:
        """``AUTHENTICATE`` with this SASL mechanism (``AUTH=XOAUTH2``...)."""
        return mechanism.upper() in self.mechanisms

    @property
    def unselects(self) -> bool:
        """``UNSELECT``: leave the selected mailbox without the expunge CLOSE may do (RFC 3691)."""
        return self._has("UNSELECT")

    @property
    def namespaces(self) -> bool:
        """``NAMESPACE`` (RFC 2342)."""
        return self._has("NAMESPACE")

    @property
    def sorts(self) -> bool:
        """``UID SORT`` (RFC 5256)."""
        return self._has("SORT")

    @property
    def sorts_partially(self) -> bool:
        """``UID SORT RETURN (PARTIAL first:last COUNT)``: a slice of the sorted matches and their number
        (ESORT with PARTIAL, RFC 5267: CONTEXT=SEARCH or CONTEXT=SORT; Cyrus 3.6 offers ESORT alone and
        refuses PARTIAL)."""
        context = self._has("CONTEXT=SEARCH") or self._has("CONTEXT=SORT")
        return self._has("SORT", "ESORT") and context

    @property
    def threads_by_references(self) -> bool:
        """``UID THREAD REFERENCES`` (RFC 5256)."""
        return self._has("THREAD=REFERENCES")

    @property
    def esearch(self) -> bool:
        """``SEARCH RETURN (...)``: counts, minimum, maximum and compact UID sets (RFC 4731)."""
        return self._has("ESEARCH")

    @property
    def moves(self) -> bool:
        """``UID MOVE`` (RFC 6851)."""
        return self._has("MOVE")

    @property
    def uidplus(self) -> bool:
        """``UID EXPUNGE`` of chosen messages and the UIDs of copies and appends (RFC 4315)."""
        return self._has("UIDPLUS")

    @property
    def append_limit(self) -> int | None:
        """``APPENDLIMIT=n``: the largest message APPEND takes, in bytes (RFC 7889); None where not said."""
        for name in self.capabilities:
            if name.startswith("APPENDLIMIT=") and name.removeprefix("APPENDLIMIT=").isdigit():
                return int(name.removeprefix("APPENDLIMIT="))
        return None

    @property
    def moves_exactly(self) -> bool:
        """Whether chosen messages can be moved and nothing else: ``UID MOVE``, or a copy followed by a
        ``UID EXPUNGE`` of exactly them."""
        return self.moves or self.uidplus

    @property
    def condstore(self) -> bool:
        """Modification sequences and conditional ``STORE`` (RFC 7162)."""
        return self._has("CONDSTORE")

    @property
    def qresync(self) -> bool:
        """Quick resynchronisation, switched on with ``ENABLE`` (RFC 7162)."""
        return self._has("QRESYNC", "ENABLE")

    @property
    def lists_with_status(self) -> bool:
        """``LIST ... RETURN (STATUS ...)``: counts with the listing (RFC 5819 over RFC 5258's syntax)."""
        return self._has("LIST-EXTENDED", "LIST-STATUS")

    @property
    def idles(self) -> bool:
        """``IDLE`` (RFC 2177)."""
        return self._has("IDLE")

    @property
    def notifies(self) -> bool:
        """``NOTIFY`` of several mailboxes, reported while idling (RFC 5465)."""
        return self._has("NOTIFY", "IDLE")

    @property
    def gmail_extensions(self) -> bool:
        """``X-GM-EXT-1``: Gmail's labels, message and thread ids and search (Google's "IMAP Extensions"
        of the Gmail developer documentation)."""
        return self._has("X-GM-EXT-1")
