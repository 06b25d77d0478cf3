"""A rule tried on the user's own mail before it is saved: how many of the last :data:`LAST` messages of
INBOX (where arriving mail lands, and rules see it) its condition matches, and the newest few; the local
index answers where the account keeps one (the search service chooses), IMAP SEARCH otherwise."""

from __future__ import annotations

import hashlib

from mail_imap_mcp.call import Call
from mail_imap_mcp.mail.cursors import DIGEST_CHARS
from mail_imap_mcp.query import Query
from mail_imap_mcp.query.sieve import rule_condition
from mail_imap_mcp.query.tree import AllOf
from mail_imap_mcp.services.rules_script import Rule
from mail_imap_mcp.services.search import search_page
from mail_imap_mcp.services.search_scope import Searched
from mail_imap_mcp.tools.manage_rules.models import DryRun, Matched

#: How many of the newest messages a dry run tries.
LAST = 10_000
#: How many of the messages it matches it shows.
NEWEST = 5
INBOX = "INBOX"


def dry_run(app: Call, account_id: str, rule: Rule, tree: Query) -> DryRun:
    """What ``rule`` (its condition ``tree``) would have done to the last :data:`LAST` messages of INBOX."""
    condition = rule_condition(tree)  # what the compiled rule tests, as a search
    where = Searched(account_id, INBOX, None, "arrival", NEWEST, 0, None)
    digest = hashlib.sha256(f"rule:{rule.query}".encode()).hexdigest()[:DIGEST_CHARS]
    page = search_page(app, where, condition, digest, ranked_query=True)
    mail = app.mail(account_id)
    messages = mail.status(INBOX).messages
    matched, tried, shown = page.total, messages, list(page.messages)
    if page.ranked:  # the index's best first: the newest first here
        shown.sort(key=lambda message: (message.arrived or message.date or "", message.uid), reverse=True)
    if messages > LAST:  # only the newest LAST: by UID, on the server
        every = mail.search(INBOX, AllOf(()))
        first = every[-LAST] if len(every) >= LAST else 0
        matched = sum(1 for uid in mail.search(INBOX, condition) if uid >= first)
        tried = min(LAST, len(every))
        shown = [message for message in shown if message.uid >= first]
    newest = [
        Matched.model_validate(
            {
                "message_id": found.message_id,
                "date": found.date,
                "from": found.from_,
                "subject": found.subject,
            }
        )
        for found in shown[:NEWEST]
    ]
    did = "; ".join(rule.actions()) or "nothing"
    words = f"Would have matched {matched:,} of your last {tried:,} messages in {INBOX} ({did})."
    return DryRun(mailbox=INBOX, matched=matched, of=tried, newest=newest, words=words)
