"""Leaving the lists of given messages, with the user's approval (issue 60 item 2): the policy.

For each message its ``List-Unsubscribe`` offer is read (:mod:`mail_imap_mcp.mime.list_unsubscribe`,
with the receiving server's Authentication-Results the account trusts), and after the user approved the
whole list once:

- RFC 8058 one-click where the message offers it and a verified DKIM signature covers both headers:
  exactly one POST through :class:`~mail_imap_mcp.net.one_click.OneClickClient` (the address rule is
  there);
- else ``mailto:``: a draft to that one address with only the link's subject and body, saved in Drafts
  for ``imap_send_draft``, which asks the user again and applies ``allowed_recipients`` (an address
  outside it is said in the dry run, in the question and in the answer: the draft will not be sent
  from here);
- else an https address is never fetched: it is handed to the user, marked untrusted.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from mail_imap_mcp.asking.page_server.page import review_page
from mail_imap_mcp.asking.page_server.request import Renderer
from mail_imap_mcp.asking.review import Review, ReviewField
from mail_imap_mcp.call import Call
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.mail.errors import MessageGone
from mail_imap_mcp.mail.ids import MessageRef, user_tag
from mail_imap_mcp.mail.roles import DRAFTS
from mail_imap_mcp.mail.trust import trusted_servers
from mail_imap_mcp.mime.authentication import authentication_results
from mail_imap_mcp.mime.list_unsubscribe import (
    MailtoUnsubscribe,
    Outcome,
    UnsubscribeOffer,
    Way,
    unsubscribe_offer,
)
from mail_imap_mcp.net.one_click import (
    OneClickFailed,
    OneClickRefused,
    OneClickTarget,
    one_click_target,
)
from mail_imap_mcp.services.drafts import build_draft, mailbox_directory
from mail_imap_mcp.services.message_lookup import message_ref


@dataclass(frozen=True)
class ListToLeave:
    """One list to leave: the message it was read from, the offer, and the way chosen."""

    message_id: str
    account_id: str
    offer: UnsubscribeOffer | None
    way: Way
    target: OneClickTarget | None = None
    #: Why an https address is handed to the user rather than posted to.
    why_not: str = ""
    #: Why imap_send_draft will refuse the mailto draft (sending off, or its address outside
    #: allowed_recipients).
    unsendable: str = ""

    @property
    def name(self) -> str:
        return self.offer.list_name if self.offer else ""


@dataclass(frozen=True)
class _MailtoDraft:
    """A mailto unsubscribe as :class:`~mail_imap_mcp.services.drafts.DraftText`: one address, the link's
    subject and body, nothing else."""

    to: tuple[str, ...]
    subject: str
    body_text: str
    cc: tuple[str, ...] = ()
    bcc: tuple[str, ...] = ()
    from_address: str | None = None
    reply_all: bool = False


@dataclass(frozen=True)
class Left:
    """What was done for one list."""

    list: ListToLeave
    outcome: Outcome
    detail: str = ""
    status: int | None = None
    draft_id: str | None = None


def lists_of(app: Call, message_ids: list[str]) -> list[ListToLeave]:
    """The list of each message (one entry per list: messages of the same list and way are one)."""
    found: dict[tuple[str, ...], ListToLeave] = {}
    for message_id in message_ids:
        ref = message_ref(app, message_id)
        headers = app.mail(ref.account_id).headers(ref.mailbox, ref.uidvalidity, [ref.uid], 1).get(ref.uid)
        if headers is None:
            raise MessageGone(ref)
        read_list(app.config.accounts[ref.account_id], ref, headers, found)
    return list(found.values())


def read_list(
    account: AccountConfig,
    ref: MessageRef,
    headers: dict[str, list[str]],
    found: dict[tuple[str, ...], ListToLeave],
) -> None:
    """Add the list of the message ``ref`` (its ``headers``) to ``found``, unless it is there already."""
    trusted = authentication_results(
        headers.get("authentication-results", []), trusted_servers(account.host, account.authserv_id)
    ).trusted
    chosen = _chosen(ref.message_id, ref.account_id, unsubscribe_offer(headers, trusted))
    mailto = chosen.offer.mailto if chosen.way == "mailto" and chosen.offer else None
    unsendable = "" if mailto is None else _why_unsendable(account, mailto.address)
    if unsendable:
        chosen = dataclasses.replace(chosen, unsendable=unsendable)
    found.setdefault(_same_list(chosen), chosen)


def _why_unsendable(account: AccountConfig, address: str) -> str:
    """Why imap_send_draft will refuse a draft to ``address`` from ``account`` ("" where it may send it)."""
    if not account.send_enabled:
        why = f"sending is off for this account ({account.named('send_enabled')})"
    elif not account.recipients_allowed.allows(address):
        why = f"{address} is outside {account.setting('allowed_recipients')}"
    else:
        return ""
    return f"{why}: imap_send_draft will refuse the draft; the user may send it from their mail client"


def _same_list(item: ListToLeave) -> tuple[str, ...]:
    """What makes two messages' lists one: the same name and the same address to leave it by (a
    message without an offer is its own)."""
    if item.offer is None:
        return (item.account_id, item.message_id)
    mailto = item.offer.mailto.address if item.offer.mailto else ""
    return (item.account_id, item.name, item.way, *item.offer.https[:1], mailto)


def _chosen(message_id: str, account_id: str, offer: UnsubscribeOffer | None) -> ListToLeave:
    if offer is None:
        return ListToLeave(message_id, account_id, None, "none")
    if offer.one_click:
        try:
            return ListToLeave(message_id, account_id, offer, "one_click", one_click_target(offer.https[0]))
        except OneClickRefused as refused:
            why = refused.reason
    else:
        why = offer.not_one_click
    if offer.mailto is not None:
        return ListToLeave(message_id, account_id, offer, "mailto", why_not=why)
    return ListToLeave(message_id, account_id, offer, "link" if offer.https else "none", why_not=why)


def review(lists: list[ListToLeave]) -> Review:
    """What the user approves: each list's name and where the request goes (the host in both forms where
    it is an international name), or the address a draft will be written to."""
    fields = []
    for number, item in enumerate(lists, 1):
        if item.way == "one_click" and item.target is not None:
            where = f"one request (HTTPS POST) to {item.target.shown_host}"
        elif item.way == "mailto" and item.offer is not None and item.offer.mailto is not None:
            sent = (
                f"never sent from here: {item.unsendable}"
                if item.unsendable
                else "sent only if you approve it again"
            )
            where = f"a draft to {item.offer.mailto.address}, {sent}"
        else:
            continue
        fields.append(ReviewField(label=f"List {number}", values=[item.name or "(no name)", where]))
    return Review(title="leave these mailing lists:", fields=fields, closing="Unsubscribe from these lists")


#: How the page shows the review: the generic page, every field on its line.
RENDER: Renderer = review_page


def leave(app: Call, lists: list[ListToLeave]) -> list[Left]:
    """Act on ``lists``, which the user approved: one POST each, a draft each, or the link handed over."""
    done = []
    for item in lists:
        if item.way == "one_click" and item.target is not None:
            done.append(_post(app, item, item.target))
        elif item.way == "mailto" and item.offer is not None and item.offer.mailto is not None:
            done.append(_draft(app, item, item.offer.mailto))
        elif item.way == "link":
            done.append(Left(item, "open_yourself", item.why_not))
        else:
            done.append(Left(item, "nothing_offered", "the message has no List-Unsubscribe"))
    return done


def _post(app: Call, item: ListToLeave, target: OneClickTarget) -> Left:
    try:
        status = app.one_click.post(target)
    except OneClickRefused as refused:
        return Left(item, "refused", refused.reason)
    except OneClickFailed as failed:
        return Left(item, "failed", str(failed))
    if 200 <= status < 300:
        return Left(item, "unsubscribed", status=status)
    if 300 <= status < 400:
        return Left(item, "not_confirmed", "the list answered with a redirect, not followed", status)
    return Left(item, "failed", f"the list answered {status}", status)


def _draft(app: Call, item: ListToLeave, mailto: MailtoUnsubscribe) -> Left:
    if not app.config.writes_allowed(item.account_id):
        return Left(
            item, "open_yourself", "writes are off: no draft can be saved; write to the address yourself"
        )
    app.write_connection(item.account_id)  # the write's gate
    account = app.config.accounts[item.account_id]
    message, _ = build_draft(
        account, None, _MailtoDraft(to=(mailto.address,), subject=mailto.subject, body_text=mailto.body)
    )
    mailbox = mailbox_directory(app, item.account_id).require(DRAFTS, item.account_id)
    appended = app.mail(item.account_id).save_draft(mailbox, message.as_bytes())
    if appended is None:
        found = f"saved in {mailbox}; find it there to send it"
        return Left(item, "draft_saved", "; ".join(filter(None, (found, item.unsendable))))
    ref = MessageRef(item.account_id, mailbox, *appended, user_tag(app.caller, item.account_id))
    return Left(item, "draft_saved", item.unsendable, draft_id=ref.message_id)
