"""A rule's condition compiled from a query (``query/sieve.py``) does what its dry run says: on a corpus
of look-alike senders, RFC 2047 subjects and names, non-ASCII names, a list and a large message, the
messages Pigeonhole's ``sieve-test`` files for each rule are exactly those Dovecot's IMAP SEARCH finds for
the rule's condition as a tree (``rule_condition``), and the ones the test names."""

from __future__ import annotations

from datetime import date

from mail_imap_mcp.query import parse, search_keys
from mail_imap_mcp.query.sieve import rule_condition, sieve_condition
from tests.support.mail.memory_sieve import PIGEONHOLE_EXTENSIONS
from tests.support.servers.sieve import SieveDovecot
from tests.support.shared.rules import CORPUS

TODAY = date(2026, 11, 29)


#: Each rule's query and the messages it must file.
RULES = {
    "from:school.example": {"school_encoded_name", "school_lookalike_domain", "teacher_plain"},
    "from:Schüle": {"school_encoded_name"},
    "subject:Zeugnis": {"school_encoded_name", "school_lookalike_domain"},
    "Elternabend": {"teacher_plain", "word_in_body_only"},
    "to:Jörg": {"non_ascii_recipient"},
    "larger:5000": {"large"},
    "from:school.example -subject:Zeugnis": {"teacher_plain"},
    "(subject:Zeugnis OR Elternabend) smaller:5000": {
        "school_encoded_name",
        "school_lookalike_domain",
        "teacher_plain",
        "word_in_body_only",
    },
}


def _script(queries: list[str], offered: frozenset[str]) -> str:
    """One script filing a copy of each message matching rule ``i`` into ``Rule<i>``."""
    conditions = [sieve_condition(parse(query, today=TODAY).tree, offered) for query in queries]
    requires = sorted({"fileinto", "copy", *(name for c in conditions for name in c.requires)})
    lines = [f"require [{', '.join(f'{chr(34)}{name}{chr(34)}' for name in requires)}];"]
    lines += [f'if {c.test} {{\n  fileinto :copy "Rule{i}";\n}}' for i, c in enumerate(conditions)]
    return "\n".join(lines) + "\n"


def test_each_compiled_rule_files_exactly_what_its_dry_run_finds(sieve_dovecot: SieveDovecot) -> None:
    queries = sorted(RULES)
    offered = frozenset(PIGEONHOLE_EXTENSIONS.split())  # the test Dovecot's SIEVE capability
    script = _script(queries, offered)
    filed: dict[str, set[str]] = {query: set() for query in queries}
    for name, message in CORPUS.items():
        actions = sieve_dovecot.sieve_test(script, message)
        for i, query in enumerate(queries):
            if f"store message in folder: Rule{i}\n" in actions:
                filed[query].add(name)

    user = sieve_dovecot.new_user()
    names = list(CORPUS)
    sieve_dovecot.seed(user, "INBOX", [CORPUS[name] for name in names])
    found: dict[str, set[str]] = {}
    with sieve_dovecot.connect(user) as client:
        client.select_folder("INBOX", readonly=True)
        for query in queries:
            keys = search_keys(rule_condition(parse(query, today=TODAY).tree))
            uids = client.search(keys or ["ALL"], charset="UTF-8")
            found[query] = {names[uid - 1] for uid in uids}

    assert filed == found  # the rule does what its dry run said
    assert filed == RULES  # and what the test expects of each
