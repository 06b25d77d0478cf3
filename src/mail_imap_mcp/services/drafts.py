"""What imap_save_draft does besides composing: the message it answers, the identities it may be sent
from, the draft it replaces, and locating the saved draft on servers without UIDPLUS.

A revised draft (``replace_message_id``) is saved first; only then is the old one moved to the Trash,
by UID and alone (``UID MOVE``, or ``UID COPY`` and ``UID EXPUNGE`` of its UID with UIDPLUS; servers with
neither are refused before anything is saved): a failure between the two leaves two drafts, never none,
and the undo moves the old one back as it was. No chain of writes turns a replacement into a permanent
delete (docs/security.md, C1): only a draft by every sign is replaced (in the Drafts folder, ``\\Draft``
set, and without attachments unless the user confirms through the client).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from email.headerregistry import Address
from email.message import EmailMessage
from typing import Literal, Protocol

from mail_imap_mcp.asking.records import Confirm
from mail_imap_mcp.call import Call
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.content.drafts import (
    MAX_RECIPIENTS,
    RepliedMessage,
    address,
    check_address,
    compose_draft,
    draft_recipients,
    header_addresses,
    message_id_domain,
)
from mail_imap_mcp.envelope import Issue, NextAction
from mail_imap_mcp.mail.backend import MAX_HEADER_BYTES
from mail_imap_mcp.mail.directory import MailboxDirectory, directory_of, same_mailbox
from mail_imap_mcp.mail.draft_errors import (
    DraftNotReplaceable,
    ForeignMessage,
    NotReplaceable,
    SenderNotOwn,
    TooManyRecipients,
)
from mail_imap_mcp.mail.drafts import Moved, is_draft
from mail_imap_mcp.mail.errors import MailError, OutcomeUnknown
from mail_imap_mcp.mail.ids import ForeignMessageId, InvalidMessageId, MessageRef, parse_message_id
from mail_imap_mcp.mail.reading import ReadOptions
from mail_imap_mcp.mail.step_failure import StepFailed
from mail_imap_mcp.services.message_read import MessageRead, read_checked

#: How much of the original a reply quotes (characters).
QUOTE_MAX_CHARS = 20_000


def mailbox_directory(app: Call, account_id: str) -> MailboxDirectory:
    """Which mailbox of ``account_id`` plays which role, with its settings (one listing)."""
    return directory_of(app.mail(account_id).mailboxes(), app.config.accounts[account_id])


@dataclass
class Original:
    """What a reply takes from the message it answers."""

    ref: MessageRef
    #: The message as read (:class:`~mail_imap_mcp.services.message_read.MessageRead`).
    detail: RepliedMessage
    warnings: list[str]


def parse_own_id(app: Call, account_id: str, text: str, parameter: str) -> MessageRef:
    """A message id of ``account_id``; ``invalid_input`` naming ``parameter`` otherwise."""
    try:
        ref = parse_message_id(text, app.caller)
    except ForeignMessageId:  # said as a message that does not exist
        raise
    except InvalidMessageId as exc:  # named as the argument that gave it; the registry words it
        raise InvalidMessageId(str(exc), parameter) from None
    if app.resolve_account(ref.account_id) != account_id:
        raise ForeignMessage(parameter, ref.account_id, account_id)
    return ref


def _read_options(app: Call, max_chars: int = QUOTE_MAX_CHARS) -> ReadOptions:
    return ReadOptions(
        body_max_chars=max_chars,
        body_format="text",
        include_headers=True,
        include_all_headers=False,
        max_text_part_bytes=app.config.server.max_text_part_bytes,
        # All of To and Cc (within the header block's bound): a reply-all counts them truly.
        max_header_value_chars=MAX_HEADER_BYTES,
    )


def read_original(app: Call, ref: MessageRef, max_chars: int = QUOTE_MAX_CHARS) -> Original:
    """The message ``ref`` with its headers and the first ``max_chars`` of its text."""
    detail, warnings = read_checked(app.mail(ref.account_id), ref, _read_options(app, max_chars))
    return Original(ref, detail, warnings)


def sender(account: AccountConfig, from_address: str | None, original: Original | None) -> Address | None:
    """The draft's From: ``from_address`` when it is one of the account's addresses (else
    ``invalid_input``); for a reply, the account's address the original was sent to; else the first of
    the account's addresses (None when it has none)."""
    identities = account.effective_addresses
    if from_address is not None:
        chosen = address(from_address)
        if chosen.addr_spec.lower() not in {a.lower() for a in identities}:
            raise SenderNotOwn(account)
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


class DraftText(Protocol):
    """What :func:`build_draft` reads of imap_save_draft's arguments."""

    @property
    def to(self) -> Sequence[str]: ...
    @property
    def cc(self) -> Sequence[str]: ...
    @property
    def bcc(self) -> Sequence[str]: ...
    @property
    def subject(self) -> str | None: ...
    @property
    def body_text(self) -> str: ...
    @property
    def from_address(self) -> str | None: ...
    @property
    def reply_all(self) -> bool: ...


def build_draft(
    account: AccountConfig, original: Original | None, args: DraftText
) -> tuple[EmailMessage, list[str]]:
    """The draft as a message (a reply to ``original`` when given) and what the user should know of it."""
    to, cc, bcc = args.to, args.cc, args.bcc
    if len(to) + len(cc) + len(bcc) > MAX_RECIPIENTS:
        raise TooManyRecipients(f"at most {MAX_RECIPIENTS} recipients in to, cc and bcc together.")
    headers = None
    if original is not None:  # From as parsed where the headers were not read
        headers = {"From": original.detail.from_ or "", **original.detail.headers}
    try:
        recipients_to, recipients_cc, warnings = draft_recipients(
            [address(value) for value in to],
            [address(value) for value in cc],
            headers,
            account.user_addresses,
            reply_all=args.reply_all,
        )
    except ValueError as exc:  # too many recipients
        raise TooManyRecipients(str(exc)) from None
    sent_as = sender(account, args.from_address, original)
    domain = message_id_domain(sent_as.addr_spec if sent_as else "", account.host)
    detail = original.detail if original is not None else None
    hidden = [address(value) for value in bcc]
    message, more = compose_draft(
        sent_as, recipients_to, recipients_cc, args.subject, args.body_text, domain, detail, hidden
    )
    return message, warnings + more


@dataclass
class Saving:
    """What saving a draft (and retiring the one it replaces) did."""

    #: (UIDVALIDITY, UID) of the saved draft, when known.
    found: tuple[int, int] | None = None
    located_by: Literal["appenduid", "search"] | None = None
    saved: bool = False
    #: The replaced draft left the Drafts folder.
    removed: bool = False
    retired: Retired | None = None
    #: What the answer must say: a step that failed is worded by presentation (``presentation/issues.py``).
    issues: list[Issue | StepFailed] = field(default_factory=list)


def save_and_retire(
    app: Call,
    account_id: str,
    mailbox: str,
    raw: bytes | bytearray,
    header_id: str,
    replaced: Replaced | None,
    *,
    dry_run: bool,
) -> Saving:
    """Save the draft (sent once, never again), find where it landed, then move the draft it replaces to
    Trash."""
    saving = Saving()
    if dry_run:
        return saving
    try:
        saving.found = app.mail(account_id).save_draft(mailbox, raw)
        saving.saved = True
    except OutcomeUnknown:
        saving.issues.append(
            Issue(
                code="outcome_unknown",
                stage="write",
                message="The connection was lost after the draft was sent to the server: it may or may not "
                "have been saved. It was not saved again; search the Drafts folder for it before saving it "
                "once more." + (" The draft it was to replace was left alone." if replaced else ""),
                retryable=False,
            )
        )
        return saving
    if saving.found is not None:
        saving.located_by = "appenduid"
    else:
        saving.found, issue = locate(app, account_id, mailbox, header_id)
        saving.located_by = "search" if saving.found is not None else None
        saving.issues += [issue] if issue is not None else []
    if replaced is not None:
        saving.retired, kept = retire_replaced(app, replaced)
        saving.removed = kept is None
        saving.issues += [kept] if kept is not None else []
    return saving


def locate(
    app: Call, account_id: str, mailbox: str, header_id: str
) -> tuple[tuple[int, int] | None, Issue | StepFailed | None]:
    """Find the saved draft by its Message-ID, where the backend did not say where it landed (IMAP without
    UIDPLUS: one UID SEARCH)."""
    said = "The draft was saved, but its message_id could not be determined ("
    after = f"); search {mailbox!r} for it."
    try:
        located = app.mail(account_id).with_message_id(mailbox, header_id)
    except MailError as exc:  # an issue of the answer, in the registry's words (presentation's)
        if exc.for_caller:
            raise
        return None, StepFailed("search", exc, said, after, code="draft_not_located", retryable=False)
    if len(located.uids) == 1:
        return (located.uidvalidity, located.uids[0]), None
    problem = f"{len(located.uids)} messages carry its Message-ID"
    return None, Issue(
        code="draft_not_located", stage="search", message=said + problem + after, retryable=False
    )


# -- replace_message_id: a draft revised in place ----------------------------------------------------


class ReplaceRequest(Protocol):
    """What check_replaceable reads of imap_save_draft's arguments."""

    replace_message_id: str | None
    dry_run: bool


@dataclass
class Replaced:
    """The draft a new one replaces, as read before the new one was saved, and the Trash it goes to."""

    ref: MessageRef
    detail: MessageRead
    trash: str


@dataclass
class Retired:
    """Where the replaced draft went: its id in Trash (None where the server did not say and a search
    by its Message-ID found no single message)."""

    trash_id: str | None


def check_replaceable(app: Call, account_id: str, args: ReplaceRequest, drafts: str, trash: str) -> Replaced:
    """The draft ``text`` names, when it is a draft by every sign: a message of this account in the Drafts
    folder ``drafts``, flagged ``\\Draft``, on a server that can move exactly one message (MOVE or
    UIDPLUS) to ``trash``, and either without attachments or confirmed by the user through the client
    (a message with attachments in Drafts may be mail moved there, not a draft; a dry run does not ask).
    Nothing is changed here."""
    ref = parse_own_id(app, account_id, args.replace_message_id or "", "replace_message_id")
    if not same_mailbox(ref.mailbox, drafts):
        raise DraftNotReplaceable(NotReplaceable.ELSEWHERE, mailbox=ref.mailbox, drafts=drafts)
    if same_mailbox(trash, drafts):
        raise DraftNotReplaceable(NotReplaceable.DRAFTS_IS_TRASH, trash=trash)
    mail = app.mail(account_id)
    detail, _ = read_checked(mail, ref, _read_options(app))  # MessageGone names ref
    if not is_draft(detail.flags):
        raise DraftNotReplaceable(NotReplaceable.NOT_A_DRAFT)
    mail.check_exact_move("move exactly the replaced draft to Trash")  # worded by the tool runner
    if detail.attachments and not args.dry_run:
        count = len(detail.attachments)
        app.ask(
            Confirm(
                f"move the draft {detail.subject or '(no subject)'!r} with {count} attachment(s) from "
                f"{drafts!r} to {trash!r}, replacing it with the new draft",
                refusal=f"The message to replace has {count} attachment(s): it may be mail moved into "
                f"{drafts!r} rather than a draft saved here, so only the user may confirm replacing it, and "
                "this client cannot ask the user (no MCP elicitation). Nothing was changed. Save the new draft "
                "without replace_message_id instead, or use a client that supports elicitation.",
                details={"parameter": "replace_message_id", "attachments": count},
            )
        )
    return Replaced(ref, detail, trash)


def retire_replaced(app: Call, replaced: Replaced) -> tuple[Retired | None, Issue | StepFailed | None]:
    """Move the replaced draft to Trash, after the new one was saved: that UID only (UID MOVE, or UID
    COPY and UID EXPUNGE of it), checked afresh to still be a ``\\Draft``. An issue (never an error: the
    new draft is saved) when it stays; None for both when it was gone already."""
    ref = replaced.ref
    try:
        moved: Moved | None = app.mail(ref.account_id).retire_draft(ref, replaced.trash)
    except OutcomeUnknown:
        problem = "the connection was lost while it was being moved to Trash; it may still be there"
    except MailError as exc:  # an issue of the answer, in the registry's words (presentation's)
        said = f"The new draft was saved, but the draft it replaces ({ref.message_id}): it could not be moved to "
        said += "Trash ("
        after = "). Delete it with imap_apply_to_messages once you have checked it."
        return None, StepFailed("write", exc, said, after, code="replaced_draft_kept", retryable=False)
    else:
        if moved is None:
            return None, None  # already gone: removed by the user's client meanwhile
        if moved.landed is not None:
            trash_ref = replace(ref, mailbox=replaced.trash, uidvalidity=moved.landed[0], uid=moved.landed[1])
            return Retired(trash_ref.message_id), None
        header_id = replaced.detail.headers.get("Message-ID")
        found, _ = locate(app, ref.account_id, replaced.trash, header_id) if header_id else (None, None)
        trash_id = MessageRef(ref.account_id, replaced.trash, *found, ref.tag).message_id if found else None
        return Retired(trash_id), None
    return None, Issue(
        code="replaced_draft_kept",
        stage="write",
        message=f"The new draft was saved, but the draft it replaces ({ref.message_id}): {problem}. "
        "Delete it with imap_apply_to_messages once you have checked it.",
        retryable=False,
    )


def audit_ids(replaced: Replaced | None, retired: Retired | None) -> dict[str, str]:
    """What the audit line names of a revision: the replaced draft, and its id in Trash."""
    named = {"replaced": replaced.ref.message_id} if replaced is not None else {}
    if retired is not None:
        named["moved_to_trash"] = retired.trash_id or "unknown"
    return named


def undo_replacement(
    replaced: Replaced | None, retired: Retired | None, new: MessageRef | None, warnings: list[str]
) -> list[NextAction]:
    """The calls that bring the replaced draft back from Trash as it was (byte for byte: it is moved, not
    rebuilt) and move the new draft to Trash; empty when nothing was replaced or an id is unknown (with
    a warning saying where to look)."""
    if replaced is None or retired is None or new is None:
        return []
    if retired.trash_id is None:
        warnings.append(
            f"The replaced draft was moved to {replaced.trash!r}, but the server did not say its new id and "
            "no single message there carries its Message-ID: find it there to bring it back."
        )
        return []
    drafts = replaced.ref.mailbox
    return [
        NextAction(
            instruction=f"Undo (1 of 2): move the replaced draft back from {replaced.trash!r} to {drafts!r}, "
            "as it was; then make data.undo[1]",
            tool="imap_apply_to_messages",
            arguments={
                "message_ids": [retired.trash_id],
                "action": "move",
                "destination_mailbox": drafts,
            },
        ),
        NextAction(
            instruction=f"Undo (2 of 2): move the new draft to {replaced.trash!r}",
            tool="imap_apply_to_messages",
            arguments={"message_ids": [new.message_id], "action": "delete"},
        ),
    ]
