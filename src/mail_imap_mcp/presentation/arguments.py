"""The argument types the tools share (pydantic ``Annotated`` types and literals, with the descriptions the
model reads). A type only one tool takes stays in that tool's module."""

from __future__ import annotations

import unicodedata
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from mail_imap_mcp.config import ACCOUNT_ID_PATTERN
from mail_imap_mcp.mail.parts import PART_ID_PATTERN

DEFAULT_ACCOUNT = "default"

AccountId = Annotated[
    str,
    Field(
        pattern=ACCOUNT_ID_PATTERN,
        description="Id from imap_list_accounts.",
    ),
]

MessageIdArg = Annotated[
    str,
    Field(
        min_length=8,
        max_length=2000,
        description="From a search or thread result.",
    ),
]


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


# Text typed by people: no control characters (CR/LF/NUL would be protocol syntax, not search text).
# Normalised to NFC on input, so "Gru\u0308\u00dfe" and "Grüße" are one search (same server match,
# same cursor digest): servers differ in whether they normalise search strings themselves.
SearchText = Annotated[
    str,
    Field(min_length=1, max_length=500, pattern=r"^[^\x00-\x08\x0a-\x1f\x7f]+$"),
    AfterValidator(_nfc),
]

# Mailbox names: no control characters either. They are sent encoded, but Dovecot echoes an unknown
# name raw in its NO response, so a CR/LF in it would inject lines into the server's answer stream.
MailboxName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=1000,
        pattern=r"^[^\x00-\x08\x0a-\x1f\x7f]+$",
        description="From imap_list_mailboxes.",
    ),
]

PartIdArg = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=PART_ID_PATTERN,
        description="From imap_get_message's attachments, e.g. '2'.",
    ),
]

#: What imap_get_message does with attachments: leave them out, list them, or list them with their text.
AttachmentMode = Literal["none", "metadata", "extract_text"]

#: The ``fields`` argument of the tools that return messages: the compact shape or the full one.
Shape = Literal["compact", "full"]
SHAPE_DESCRIPTION = "full adds URIs, uid and nulls."
#: What docs/tools.md says of ``fields`` (a tool's details).
SHAPE_DETAILS = (
    "`fields`: `compact` (the default) gives the fields an agent reads, with no nulls, no empty lists and "
    "nothing derivable from `message_id`; `full` gives every field, `message_uri`, `message_raw_uri`, "
    "`mailbox`, `uidvalidity`, `uid` and nulls included."
)
