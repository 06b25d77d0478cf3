"""A rule that sends mail (forwards, or replies) as the user approves it: the generic
:class:`~mail_imap_mcp.asking.review.Review` (the question a client shows by elicitation, and the approval
page, ``review_page``, shows the same), with the rule's name and condition, each action in words (each
recipient, and each allowed sender a reply goes to, on a line of its own), the reply's text, and its Sieve
text exactly, whole. ``app.ask`` chooses the way (the client's question, else the page); no token stands in
for it (a send never is ``confirmable``), so the agent can never approve it itself."""

from __future__ import annotations

from mail_imap_mcp.asking.page_server.page import review_page
from mail_imap_mcp.asking.page_server.request import Renderer
from mail_imap_mcp.asking.review import Review, ReviewContent, ReviewField, ReviewWords
from mail_imap_mcp.services.rules_script import ANYONE, WrittenRule

#: What the agent is told of a rule that sends the user did not approve.
RULE_WORDS = ReviewWords(
    asking="The user is asked to approve this rule, which sends mail, exactly as shown.",
    declined="The user did not approve the rule ({decision}); nothing was saved.",
    cancelled="The rule was cancelled (imap_cancel_operation) before the user decided; the approval page was "
    "closed and nothing was saved.",
    opened_twice="The approval page was opened a second time (a reload, a restored tab, or someone else with "
    "its address), which cancels it: the user did not decline, and nothing was saved. Save the rule again "
    "to show the user a new page.",
    unavailable="A rule that forwards or replies sends mail while nobody watches, so only the user may approve its "
    "exact text, in a client that asks them (MCP elicitation) or on the approval page; this client cannot "
    "ask and no approval page could be shown. Nothing was saved.",
)

#: How the page shows it: the generic page, every field on its line and the Sieve text whole.
RENDER: Renderer = review_page


def rule_review(account_id: str, written: WrittenRule) -> Review:
    """What the user approves before ``written`` (a rule that forwards, or replies) is saved on ``account_id``."""
    rule = written.rule
    actions = [f"forward a copy of each matching message to {address}" for address in rule.redirect]
    actions += [action for action in rule.actions() if not action.startswith("forward a copy to ")]
    fields = [
        ReviewField(label="Rule", values=[rule.name]),
        ReviewField(label="Condition", values=[rule.query]),
        ReviewField(label="Actions", values=actions, listed=True),
    ]
    contents = []
    sends = []
    if rule.redirect:
        fields.append(ReviewField(label="Forwards to", values=list(rule.redirect), listed=True))
        sends.append(f"forwards mail to {', '.join(rule.redirect)}")
    if (vacation := rule.vacation) is not None:
        whom = ["anyone (allowed_recipients is *)"] if ANYONE in vacation.senders else list(vacation.senders)
        fields.append(ReviewField(label="Replies to mail from", values=whom, listed=True))
        fields.append(ReviewField(label="Reply's subject", values=[vacation.subject]))
        contents.append(ReviewContent(label="The reply's text, exactly", text=vacation.text))
        shown = "anyone" if ANYONE in vacation.senders else ", ".join(vacation.senders)
        sends.append(f"replies to mail from {shown} with {vacation.subject!r}")
    contents.append(ReviewContent(label="Its Sieve text, exactly", text=written.block))
    return Review(
        title=f"save this rule on account {account_id!r}: the mail server runs it on every arriving "
        "message, whenever it matches, with nobody asked again:",
        fields=fields,
        contents=contents,
        closing=f"Save the rule {rule.name!r} that {' and '.join(sends)}",
        words=RULE_WORDS,
    )
