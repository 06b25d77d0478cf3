"""The plan of ``needs_reply``: mail that awaits the user's answer, found with a bounded number of round
trips.

The server narrows the candidates in the search itself (:class:`mail_imap_mcp.query.NeedsReply`): not
``\\Answered``, not from the account's own addresses, no ``List-Id``, no ``Auto-Submitted`` other than
``no`` (RFC 3834: its other values start with ``auto-``), no ``Precedence`` bulk, list or junk, not from
a no-reply or mailer-daemon sender. Then one search of the Sent mailbox for the page's Message-IDs in
``In-Reply-To`` or ``References`` and one FETCH of the headers of what it found (:func:`answered_in`) say
which candidates were answered from a client that does not set ``\\Answered``, judged as
``mail/replies.py`` says.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.replies import MAX_ANSWERS_READ, Candidate, answer_of, answer_search, answered_by
from mail_imap_mcp.query import search_keys

_ANSWER_HEADERS = "BODY.PEEK[HEADER.FIELDS (IN-REPLY-TO REFERENCES TO CC BCC DATE)]<0.65536>"


def answered_in(session: ImapSession, sent_mailbox: str, candidates: Sequence[Candidate]) -> set[str]:
    """The keys of those ``candidates`` a message of ``sent_mailbox`` answers (module docstring):
    EXAMINE with one UID SEARCH (one round trip), then one UID FETCH of the headers when it found any."""
    search = answer_search(candidates)
    if search is None:
        return set()
    session.examine_ahead(sent_mailbox)
    uids = sorted(session.uid_search(search_keys(search)))[-MAX_ANSWERS_READ:]
    if not uids:
        return set()
    answers = []
    for response in session.fetch(uids, [_ANSWER_HEADERS, "INTERNALDATE"]).values():
        raw = next((v for k, v in response.items() if isinstance(k, bytes) and k.startswith(b"BODY[")), b"")
        internal = response.get(b"INTERNALDATE")
        arrived = internal if isinstance(internal, datetime) else None
        answers.append(answer_of(raw if isinstance(raw, bytes) else b"", arrived))
    return answered_by(candidates, answers)
