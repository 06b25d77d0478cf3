"""The claim of a draft on the IMAP server right before it is submitted, so that servers on two machines
never both send it (the state store's record keeps the processes of one machine apart).

Where the server offers CONDSTORE (RFC 7162) and lets the Drafts folder keep a new keyword (PERMANENTFLAGS
``\\*`` or the keyword itself), the draft gets :data:`CLAIM_KEYWORD` by ``UID STORE (UNCHANGEDSINCE m)``
with ``m`` the MODSEQ read when the keyword was not yet there: of two servers storing it from the same
MODSEQ the second is answered ``[MODIFIED]``, and one that reads the MODSEQ later sees the keyword. The
keyword stays after a send whose outcome is unknown (and after a crash mid-send); it is taken back when
nothing was sent. Elsewhere (Courier: no CONDSTORE; Microsoft 365: no CONDSTORE, no keywords of its own)
the record of the machine is the one guard (docs/security.md). The backend's ``mark_once``
(``mail/backend.py``) is that store; this module says what the claim is and what its outcome means.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from enum import Enum

from mail_imap_mcp.mail.backend import MailWriting, MarkedOnce
from mail_imap_mcp.mail.errors import MailError
from mail_imap_mcp.mail.ids import MessageRef

log = logging.getLogger("mail_imap_mcp.send")

#: The keyword a draft being sent carries (no ``$``: RFC 5788 keeps those for registered keywords).
CLAIM_KEYWORD = "MailImapMcpSending"


class Claim(Enum):
    """How the claim of a draft went."""

    #: This call set the keyword: no other server will send the draft.
    CLAIMED = "claimed"
    #: Another server (or an earlier send of unknown outcome) holds it: not sent.
    TAKEN = "taken"
    #: The server cannot hold an exclusive claim: the record of the machine is the guard.
    UNSUPPORTED = "unsupported"


def carries_claim(flags: Iterable[str]) -> bool:
    """Whether a draft's flags hold :data:`CLAIM_KEYWORD` (keywords compare without case)."""
    return any(flag.lower() == CLAIM_KEYWORD.lower() for flag in flags)


_CLAIMS: dict[MarkedOnce, Claim] = {
    "set": Claim.CLAIMED,
    "held": Claim.TAKEN,
    "unsupported": Claim.UNSUPPORTED,
}


def claim_draft(mail: MailWriting, ref: MessageRef) -> Claim:
    """Claim the draft ``ref`` (see the module); :class:`~mail_imap_mcp.mail.errors.MessageGone` where it is
    no longer there."""
    return _CLAIMS[mail.mark_once(ref, CLAIM_KEYWORD)]


def release_draft(mail: MailWriting, ref: MessageRef) -> None:
    """Take the claim back after a send that sent nothing; a failure is logged (the draft then stays
    claimed, and is sent again once saved anew: docs/security.md)."""
    try:
        mail.unmark(ref, CLAIM_KEYWORD)
    except MailError as exc:
        log.warning("account=%s the draft keeps its claim %s: %s", ref.account_id, CLAIM_KEYWORD, exc)
