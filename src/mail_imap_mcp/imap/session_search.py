"""The commands that search the selected mailbox, for :class:`~mail_imap_mcp.imap.session.ImapSession`
(which inherits them): ``UID SEARCH`` (all matches, their count, or both in one scan where ESEARCH is
offered), ``UID SORT`` by sent date and ``UID THREAD REFERENCES`` (RFC 5256), each sent only where the
server's profile offers it. Sent on the session's connection as it is, possibly pipelined behind the
view's revalidation, whose answer is read after theirs (``_selected_mailbox_errors``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

from mail_imap_mcp.imap import parsing, wire
from mail_imap_mcp.imap.personality import Profile
from mail_imap_mcp.imap.wire import BudgetedIMAPClient


class SearchSession(Protocol):
    """What the search commands use of the session."""

    @property
    def profile(self) -> Profile: ...
    @property
    def _client(self) -> BudgetedIMAPClient: ...
    def _selected_mailbox_errors(self) -> AbstractContextManager[None]: ...
    def uid_search(self, criteria: list[bytes | str | int], *, charset: str | None = None) -> list[int]: ...


class SearchCommands:
    """``UID SEARCH``, ``UID SORT`` and ``UID THREAD`` on the selected mailbox (see the module)."""

    def uid_search(
        self: SearchSession, criteria: list[bytes | str | int], *, charset: str | None = None
    ) -> list[int]:
        """``UID SEARCH`` with criteria already tokenised; strings are quoted or sent as literals."""
        with self._selected_mailbox_errors():
            data = self._client.uid_command_untagged(b"SEARCH", wire.search_args(criteria, charset))
        return parsing.search_uids(data)

    def uid_search_counted(
        self: SearchSession, criteria: list[bytes | str | int], *, charset: str | None = None
    ) -> tuple[int, list[tuple[int, int]]]:
        """The number of matches and their UIDs as ascending ``(first, last)`` runs, in one scan:
        ``UID SEARCH RETURN (COUNT ALL)`` (ESEARCH, RFC 4731: the UIDs come as a compact set, so a run
        of matches costs a few bytes), else one plain ``UID SEARCH`` (every UID)."""
        if not self.profile.esearch:
            return parsing.uid_runs(self.uid_search(criteria, charset=charset))
        args = [b"RETURN", b"(COUNT ALL)", *wire.search_args(criteria, charset)]
        with self._selected_mailbox_errors():
            data = self._client.uid_command_untagged(b"SEARCH", args, response_name="ESEARCH")
        return parsing.search_count(data), parsing.search_all_runs(data)

    def uid_sort_by_date(
        self: SearchSession, criteria: list[bytes | str | int], *, charset: str | None = None
    ) -> list[int]:
        """``UID SORT (REVERSE DATE)`` (RFC 5256): matching UIDs, newest sent date first.

        The server's sort key is the Date header in UTC, else INTERNALDATE; ties keep mailbox order.
        Only where the server advertises SORT (raises ``ValueError`` otherwise)."""
        if not self.profile.sorts:
            raise ValueError("SORT is not advertised by the server")
        return parsing.search_uids(_rfc5256(self, "SORT", b"(REVERSE DATE)", criteria, charset))

    def uid_sort(
        self: SearchSession,
        head: list[bytes],
        criteria: list[bytes | str | int],
        *,
        charset: str | None = None,
        partial: bool = False,
    ) -> list[Any]:
        """``UID SORT head charset criteria`` (RFC 5256; ``head``: ``RETURN (...)`` and the sort criteria):
        its untagged answer as the server gave it, ``ESEARCH`` where ``partial`` (ESORT, RFC 5267) asks
        for a slice. Only where the server advertises SORT (raises ``ValueError`` otherwise)."""
        if not self.profile.sorts or (partial and not self.profile.sorts_partially):
            raise ValueError("SORT (or ESORT's PARTIAL) is not advertised by the server")
        args = [*head, (charset or "US-ASCII").encode("ascii")]
        args += [wire.encode_search_token(item, charset) for item in criteria or [b"ALL"]]
        with self._selected_mailbox_errors():
            return self._client.uid_command_untagged(
                b"SORT", args, response_name="ESEARCH" if partial else None
            )

    def uid_thread_references(
        self: SearchSession, criteria: list[bytes | str | int], *, charset: str | None = None
    ) -> list[list[int]]:
        """``UID THREAD REFERENCES`` (RFC 5256) of the matching messages: one UID list per thread.

        Only where the server advertises THREAD=REFERENCES (raises ``ValueError`` otherwise)."""
        if not self.profile.threads_by_references:
            raise ValueError("THREAD=REFERENCES is not advertised by the server")
        return parsing.thread_uids(_rfc5256(self, "THREAD", b"REFERENCES", criteria, charset))


def _rfc5256(
    session: SearchSession, command: str, head: bytes, criteria: list[bytes | str | int], charset: str | None
) -> list[Any]:
    """``UID SORT``/``UID THREAD`` with ``head`` (criteria or algorithm), the charset and the search keys
    (the caller has asked the profile for the extension)."""
    args: list[bytes] = [head, (charset or "US-ASCII").encode("ascii")]
    args += [wire.encode_search_token(item, charset) for item in criteria or [b"ALL"]]
    with session._selected_mailbox_errors():
        return session._client.uid_command_untagged(command.encode("ascii"), args)
