"""What the shapes say about who sent a message: the receiving server's authentication results and the
sender warnings (:mod:`mail_imap_mcp.mime.authentication`'s facts), in the message's shapes and in every
summary's (:mod:`.shapes`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from mail_imap_mcp.envelope import CompactPayload, absent_field
from mail_imap_mcp.mime.authentication import SenderWarning as SenderFact

__all__ = [
    "AUTHENTICATION_DESCRIPTION",
    "HIT_WARNINGS_CHANGE",
    "HIT_WARNINGS_DESCRIPTION",
    "HIT_WARNINGS_DETAILS",
    "SENDER_WARNINGS_DESCRIPTION",
    "Authentication",
    "SenderWarning",
    "SenderWarningCode",
    "shown_warnings",
]

SenderWarningCode = Literal[
    "display_name_is_other_address",
    "dmarc_fail",
    "punycode_domain",
    "mixed_script_domain",
    "reply_to_other_domain",
    "multiple_from_addresses",
    "sender_differs_from_from",
    "unverified_authentication",
]


class SenderWarning(CompactPayload):
    """A fact about the sender worth a second look; not a verdict."""

    code: SenderWarningCode = Field(
        description="display_name_is_other_address, dmarc_fail, punycode_domain, mixed_script_domain, "
        "reply_to_other_domain, multiple_from_addresses, sender_differs_from_from or "
        "unverified_authentication."
    )
    message: str = Field(description="The fact, naming the addresses and domains (the sender's text).")


#: What a summary's sender_warnings are: its From, Reply-To and Sender's, the same from the server and the
#: index; not the authentication results (the message's).
HIT_WARNINGS_DESCRIPTION = (
    "What the From, Reply-To and Sender headers tell worth a second look, not a verdict (the codes "
    "of imap_get_message but dmarc_fail and unverified_authentication, which need the message's "
    "Authentication-Results: read it before acting on it). Absent when none."
)

#: What imap_search_messages' details say of its summaries' sender warnings (docs/tools.md).
HIT_WARNINGS_DETAILS = (
    "A summary whose sender is worth a second look has `sender_warnings` (absent otherwise): "
    "`display_name_is_other_address`, `multiple_from_addresses`, `sender_differs_from_from`, "
    "`punycode_domain`, `mixed_script_domain`, `reply_to_other_domain`, what its From, Reply-To and "
    "Sender headers tell, the same whether the server or the local index answers. DMARC (`dmarc_fail`, "
    "`unverified_authentication`) needs the message's Authentication-Results: `imap_get_message` says "
    "it, so read a message before acting on it ([security.md](security.md#what-is-not-defended))."
)
#: The change a caller of the search (and of imap_get_thread, imap_get_changes) may notice.
HIT_WARNINGS_CHANGE = (
    "Each summary (here, in imap_get_thread and imap_get_changes) carries `sender_warnings` where its "
    "From, Reply-To and Sender tell some (a display name that is another address, several From "
    "addresses, a Sender that is not the From, a punycode or mixed-script domain, a Reply-To on another "
    "domain), absent otherwise; `untrusted_content` then names them."
)


class Authentication(CompactPayload):
    """What the receiving server's Authentication-Results header says (RFC 8601)."""

    authserv_id: str | SkipJsonSchema[None] = absent_field(
        "The server that checked the message (its authserv-id); absent when the header names none "
        "(Microsoft 365)."
    )
    spf: str | SkipJsonSchema[None] = absent_field(
        "SPF: pass, fail, softfail, neutral, none, temperror, permerror. Absent when not checked."
    )
    dkim: str | SkipJsonSchema[None] = absent_field(
        "DKIM (the best of the signatures): pass, fail, neutral, none, policy, temperror, permerror. "
        "Absent when not checked."
    )
    dmarc: str | SkipJsonSchema[None] = absent_field(
        "DMARC: pass, fail, none, temperror, permerror. Absent when not checked."
    )


AUTHENTICATION_DESCRIPTION = (
    "SPF, DKIM and DMARC results from the Authentication-Results header of a receiving server the account "
    "trusts: its authserv_id setting, else its provider's (Gmail: mx.google.com; Microsoft 365: the "
    "topmost header, which names no server). Absent when no trusted server wrote one: any other header "
    "may be the sender's own (a claimed pass then becomes the sender warning unverified_authentication)."
)


SENDER_WARNINGS_DESCRIPTION = (
    "Facts about the sender worth a second look (a display name that is another address, DMARC failed, "
    "a punycode or mixed-script domain, a Reply-To on another domain), not verdicts. Absent when none."
)


def shown_warnings(facts: tuple[SenderFact, ...] | list[SenderFact]) -> list[SenderWarning] | None:
    """The sender warnings of a record (or a read message) as the shapes show them; None when none."""
    return [SenderWarning(code=f.code, message=f.message) for f in facts] or None
