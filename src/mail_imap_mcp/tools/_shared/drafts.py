"""What imap_save_draft does besides composing: the message it answers, the identities it may be sent
from, the draft it replaces, and locating the saved draft on servers without UIDPLUS.

A revised draft (``replace_message_id``) is saved first; only then is the old one removed, by UID and
alone (``UID STORE +FLAGS.SILENT (\\Deleted)`` and ``UID EXPUNGE`` of its UID, UIDPLUS): a failure
between the two leaves two drafts, never none. Servers without UIDPLUS are refused before anything is
saved, as their only way to remove a message is a mailbox-wide EXPUNGE that would take every other
message marked ``\\Deleted`` with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from email.headerregistry import Address
from typing import Any

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.content.drafts import (
    MAX_RECIPIENTS,
    address,
    check_address,
    check_header_text,
    header_addresses,
)
from mail_imap_mcp.envelope import Issue, ToolFailure
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.directory import same_mailbox
from mail_imap_mcp.imap.errors import (
    CommandRefused,
    ImapError,
    MailboxMissing,
    OutcomeUnknown,
)
from mail_imap_mcp.imap.fetch import MessageGone, ReadOptions
from mail_imap_mcp.imap.ids import InvalidMessageId, MessageRef, parse_message_id
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.tools._shared.failures import extension_missing, mailbox_refused, message_gone
from mail_imap_mcp.tools._shared.message_lookup import examine_for
from mail_imap_mcp.tools._shared.message_read import read_checked, read_detail
from mail_imap_mcp.tools._shared.shapes import MessageDetail
from mail_imap_mcp.tools.context import AppContext

DRAFT_FLAG = "\\Draft"
DRAFT_FLAGS = (DRAFT_FLAG, "\\Seen")
#: How much of the original a reply quotes, and of a replaced draft its undo restores (characters).
QUOTE_MAX_CHARS = 20_000


def is_draft(flags: Sequence[str]) -> bool:
    return any(flag.lower() == DRAFT_FLAG.lower() for flag in flags)


@dataclass
class Original:
    """What a reply takes from the message it answers."""

    ref: MessageRef
    detail: MessageDetail
    warnings: list[str]


def parse_own_id(app: AppContext, account_id: str, text: str, parameter: str) -> MessageRef:
    """A message id of ``account_id``; ``invalid_input`` naming ``parameter`` otherwise."""
    try:
        ref = parse_message_id(text)
    except InvalidMessageId as exc:
        raise ToolFailure.invalid_input(parameter, f"{exc}.") from None
    if app.resolve_account(ref.account_id) != account_id:
        raise ToolFailure.invalid_input(
            parameter, f"the message belongs to account {ref.account_id!r}, not {account_id!r}."
        )
    return ref


def _read_options(app: AppContext) -> ReadOptions:
    return ReadOptions(
        body_max_chars=QUOTE_MAX_CHARS,
        body_format="text",
        include_headers=True,
        include_all_headers=False,
        max_text_part_bytes=app.config.server.max_text_part_bytes,
    )


def read_original(app: AppContext, ref: MessageRef) -> Original:
    detail, warnings = read_checked(app.connection(ref.account_id), ref, _read_options(app))
    return Original(ref, detail, warnings)


def sender(account: AccountConfig, from_address: str | None, original: Original | None) -> Address | None:
    """The draft's From: ``from_address`` when it is one of the account's addresses (else
    ``invalid_input``); for a reply, the account's address the original was sent to; else the first of
    the account's addresses (None when it has none)."""
    identities = account.effective_addresses
    if from_address is not None:
        chosen = address(from_address)
        if chosen.addr_spec.lower() not in {a.lower() for a in identities}:
            known = ", ".join(identities) if identities else "none configured"
            raise ToolFailure.invalid_input(
                "from_address",
                f"it must be one of the account's addresses ({known}); the user adds send-as "
                f"identities with {account.setting('addresses')}.",
            )
        return chosen
    if original is not None:
        headers = original.detail.headers
        named = {a.addr_spec.lower() for n in ("To", "Cc") for a in header_addresses(headers.get(n))}
        for identity in identities:
            if identity.lower() in named:
                return Address(addr_spec=identity)
    try:
        return Address(addr_spec=check_address(next(iter(identities), account.username)))
    except ValueError:
        return None


def append_draft(session: ImapSession, account_id: str, mailbox: str, raw: bytes) -> tuple[int, int] | None:
    selected = session.selected_mailbox
    if selected is not None and same_mailbox(selected, mailbox):
        session.deselect()  # Courier refuses an APPEND to the mailbox the connection has EXAMINEd
    try:
        with session.write_command():
            return session.append(mailbox, raw, DRAFT_FLAGS)
    except (CommandRefused, MailboxMissing) as refused:  # named as the setting that chose the mailbox
        raise mailbox_refused(refused, account_id, "APPEND", mailbox, "drafts_mailbox") from None


def locate(
    app: AppContext, account_id: str, mailbox: str, header_id: str
) -> tuple[tuple[int, int] | None, Issue | None]:
    """Find the saved draft by its Message-ID (servers without UIDPLUS): one UID SEARCH."""

    def search(session: ImapSession) -> tuple[int, list[int]]:
        state = session.examine(mailbox)
        return state.uidvalidity, session.uid_search([b"HEADER", b"MESSAGE-ID", header_id])

    try:
        uidvalidity, uids = app.connection(account_id).run(search)
    except ToolFailure as failure:
        uidvalidity, uids, problem = 0, [], failure.message
    else:
        problem = f"{len(uids)} messages carry its Message-ID"
    if len(uids) == 1:
        return (uidvalidity, uids[0]), None
    return None, Issue(
        code="draft_not_located",
        stage="search",
        message=f"The draft was saved, but its message_id could not be determined ({problem}); search "
        f"{mailbox!r} for it.",
        retryable=False,
    )


# -- replace_message_id: a draft revised in place ----------------------------------------------------


@dataclass
class Replaced:
    """The draft a new one replaces, as read before the new one was saved."""

    ref: MessageRef
    detail: MessageDetail


def check_replaceable(app: AppContext, connection: AccountConnection, text: str, drafts: str) -> Replaced:
    """The draft ``text`` names, when it can be replaced: a message of this account in the Drafts folder
    ``drafts``, flagged ``\\Draft``, on a server with UIDPLUS. Nothing is changed here."""
    ref = parse_own_id(app, connection.account_id, text, "replace_message_id")
    if not same_mailbox(ref.mailbox, drafts):
        raise ToolFailure.invalid_input(
            "replace_message_id",
            f"only a draft in the Drafts folder {drafts!r} can be replaced; this message is in "
            f"{ref.mailbox!r}. Nothing was changed.",
        )

    def read(session: ImapSession) -> tuple[MessageDetail, frozenset[str]]:
        examine_for(session, ref)
        try:
            detail, _ = read_detail(session, ref, _read_options(app))
        except MessageGone:
            raise message_gone(ref) from None
        return detail, session.capabilities

    detail, capabilities = connection.run(read)
    if not is_draft(detail.flags):
        raise ToolFailure.invalid_input(
            "replace_message_id",
            "the message is not a draft (it has no \\Draft flag); only a draft can be replaced. Nothing "
            "was changed.",
        )
    if "UIDPLUS" not in capabilities:
        raise extension_missing("UIDPLUS", "remove exactly the replaced draft (UID EXPUNGE)")
    return Replaced(ref, detail)


def remove_replaced(connection: AccountConnection, replaced: Replaced) -> Issue | None:
    """Remove the replaced draft, after the new one was saved: that UID only, checked afresh to still be
    a ``\\Draft``. An issue (never an error: the new draft is saved) when it stays."""
    ref = replaced.ref

    def remove(session: ImapSession) -> bool:
        session.select(ref.mailbox, uidvalidity=ref.uidvalidity)
        flags = session.fetch_flags([ref.uid]).get(ref.uid)
        if flags is None:
            return False  # already gone: removed by the user's client meanwhile
        if not is_draft(flags.flags):
            raise ToolFailure.invalid_input("replace_message_id", "it lost its \\Draft flag meanwhile.")
        session.uid_expunge([ref.uid])
        return True

    try:
        connection.run_write(remove)
    except OutcomeUnknown:
        problem = "the connection was lost while it was being removed; it may still be there"
    except (ToolFailure, ImapError) as failure:
        problem = f"it could not be removed ({getattr(failure, 'message', None) or type(failure).__name__})"
    else:
        return None
    return Issue(
        code="replaced_draft_kept",
        stage="write",
        message=f"The new draft was saved, but the draft it replaces ({ref.message_id}): {problem}. "
        "Delete it with imap_apply_to_messages once you have checked it.",
        retryable=False,
    )


def restore_arguments(
    account: AccountConfig, account_id: str, replaced: Replaced, new_id: str
) -> dict[str, Any] | None:
    """Arguments of imap_save_draft that put the replaced draft's recipients, subject and text back
    (replacing the new one); None when they cannot say all of it (attachments, HTML only, a long text)."""
    old = replaced.detail
    if old.attachments or old.body_truncated or old.body_source not in ("text/plain", None):
        return None
    try:
        to = [check_address(str(a)) for a in header_addresses(old.headers.get("To"))]
        cc = [check_address(str(a)) for a in header_addresses(old.headers.get("Cc"))]
        subject = check_header_text(old.subject) if old.subject is not None else None
        senders = header_addresses(old.headers.get("From"))
    except ValueError:
        return None
    if len(to) + len(cc) > MAX_RECIPIENTS:
        return None
    own = {a.lower() for a in account.effective_addresses}
    senders = [a for a in senders if a.addr_spec.lower() in own]
    arguments: dict[str, Any] = {"account_id": account_id, "replace_message_id": new_id}
    arguments |= {"to": to} if to else {}
    arguments |= {"cc": cc} if cc else {}
    arguments |= {"subject": subject} if subject else {}
    arguments |= {"from_address": str(senders[0])} if senders else {}
    arguments["body_text"] = old.body_text or ""
    return arguments
