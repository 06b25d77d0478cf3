"""Once saved, the dry run of the rule as the server holds it (issue 91 item 4): imap_manage_rules reads
the saved script again and answers ``as_saved``, what that rule would have done; Pigeonhole's
``sieve-test`` runs the very script the server holds on each message of a corpus (look-alike senders,
RFC 2047 subjects and names, non-ASCII names, list mail, a large message) and does exactly that: the same
messages, and on each the same actions (filed, flagged), the rest kept in INBOX. On Cyrus (timsieved, no
``sieve-test``) the rule held is the one tried, so ``as_saved`` is its dry run."""

from __future__ import annotations

import email
from email import policy
from typing import Any

import pytest

from mail_imap_mcp.services.rules_script import OWN_SCRIPT
from tests.support.clients.in_process import open_client
from tests.support.servers.sieve import SieveCyrus, SieveDovecot
from tests.support.shared.rules import CORPUS, TOOL, rules_config, sieve_scripts

pytestmark = pytest.mark.anyio

#: Each rule's condition and flags; it files into Filed and stops.
CASES: list[tuple[str, list[str]]] = [
    ("from:school.example", ["\\Flagged"]),
    ("from:Schüle", []),
    ("subject:Zeugnis", ["\\Flagged", "$Schule"]),
    ("Elternabend", []),
    ("to:Jörg", ["\\Seen"]),
    ("from:news@shop.example", ["$Newsletter"]),
    ("larger:5000", []),
    ("from:school.example -subject:Zeugnis", []),
]
KEPT = "Performed actions:\n\n  (none)\n\nImplicit keep:\n\n * store message in folder: INBOX"


def _subject(raw: bytes) -> str:
    return str(email.message_from_bytes(raw, policy=policy.default)["subject"])


def _performed(actions: list[str]) -> str:
    """What sieve-test prints for a message a rule of ``actions`` (its words) matched."""
    flags = next(
        (words.removeprefix("add flags ").split(", ") for words in actions if words.startswith("add flags ")),
        [],
    )
    mailbox = next(words.removeprefix("file into ") for words in actions if words.startswith("file into "))
    shown = " ".join(flag.lower() if flag.startswith("\\") else flag for flag in flags)
    added = f"        + add IMAP flags: {shown}\n" if flags else ""
    return f"Performed actions:\n\n * store message in folder: {mailbox}\n{added}\nImplicit keep:\n\n  (none)"


async def test_the_saved_script_does_exactly_what_the_dry_run_as_saved_said(
    sieve_dovecot: SieveDovecot,
) -> None:
    server, user = sieve_dovecot, sieve_dovecot.new_user()
    with server.connect(user) as client:
        client.create_folder("Filed")
    names = list(CORPUS)
    server.seed(user, "INBOX", [CORPUS[name] for name in names])
    subjects = {name: _subject(CORPUS[name]) for name in names}
    seen: dict[str, int] = {}
    async for mcp in open_client(rules_config(server, user, rules_enabled=True)):
        for query, flags in CASES:
            rule = {"action": "save", "name": "R", "query": query, "mailbox": "Filed", "flags": flags}
            saved = await mcp.ok(TOOL, rule)  # each save replaces the rule R
            held, actions = saved["as_saved"], saved["rules"][0]["actions"]
            assert held["words"].startswith("As saved on the server: would have matched")
            assert held["words"].endswith(f"({'; '.join(actions)}).") and held["of"] == len(names)
            with sieve_scripts(server, user) as scripts:
                script = scripts.get_script(OWN_SCRIPT)  # the script the server holds, read back
            performed = {name: server.sieve_test(script, CORPUS[name]).strip() for name in names}
            filed = {subjects[name] for name, done in performed.items() if done != KEPT}
            assert (held["matched"], {found["subject"] for found in held["newest"]}) == (len(filed), filed), (
                query
            )
            for name, done in performed.items():  # the same actions on each message it matched
                assert done == (_performed(actions) if subjects[name] in filed else KEPT), (query, name, done)
            seen[query] = held["matched"]
    # What each rule must match of the corpus (the look-alike domain is from:school.example too: a
    # substring, as IMAP's FROM matches), so the comparison above is not of two empty sets.
    assert seen == {
        "from:school.example": 3,
        "from:Schüle": 1,
        "subject:Zeugnis": 2,
        "Elternabend": 2,
        "to:Jörg": 1,
        "from:news@shop.example": 1,
        "larger:5000": 1,
        "from:school.example -subject:Zeugnis": 1,
    }


async def test_on_cyrus_the_rule_held_is_the_one_tried(sieve_cyrus: SieveCyrus) -> None:
    server, user = sieve_cyrus, sieve_cyrus.new_user()
    filed = server.mailbox_name("Filed")
    with server.connect(user) as client:
        client.create_folder(filed)
    server.seed(user, "INBOX", list(CORPUS.values()))
    rule: dict[str, Any] = {"action": "save", "name": "R", "query": "subject:Zeugnis", "mailbox": filed}
    async for mcp in open_client(rules_config(server, user, rules_enabled=True)):
        saved = await mcp.ok(TOOL, rule)
    held, tried = saved["as_saved"], saved["dry_run"]
    assert {**held, "words": ""} == {**tried, "words": ""} and held["matched"] == 2
    assert held["words"] == f"As saved on the server: w{tried['words'][1:]}"
