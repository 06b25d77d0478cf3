"""Rules kept on the in-memory ManageSieve (``services/rules.py`` and ``rules_script.py``): the rules'
own script included from the user's active script (or a marked section where the server has no
include), the user's script kept byte for byte, each change undone (and an undo redone), a script changed
meanwhile or by hand a conflict, the server's verdict in its words."""

from __future__ import annotations

from datetime import date

import pytest

from mail_imap_mcp.mail.sieve_errors import RulesConflict, ScriptRefused
from mail_imap_mcp.query import parse
from mail_imap_mcp.query.sieve import sieve_condition
from mail_imap_mcp.services.rules import RulesState, change_rules, read_state, undo
from mail_imap_mcp.services.rules_script import (
    BEGIN,
    OWN_SCRIPT,
    UNDO_SCRIPT,
    Rule,
    Vacation,
    WrittenRule,
    after_requires,
    compile_rule,
    find_section,
    own_script,
    read_own_script,
    with_section,
)
from tests.support.mail.memory_sieve import PIGEONHOLE_EXTENSIONS, MemorySieve

USERS = (
    '# my own rules\r\nrequire ["fileinto", "vacation"];\r\n/* spam */\r\nif header :contains "subject" '
    '"[SPAM]" {\r\n  fileinto "Junk";\r\n}\r\n'
)


def school(name: str = "School", query: str = "from:school.example") -> WrittenRule:
    condition = sieve_condition(parse(query, today=date(2026, 11, 29)).tree)
    return compile_rule(Rule(name, query, mailbox="School", add_flags=("\\Flagged",)), condition)


def save(sieve: MemorySieve, new: WrittenRule, version: str | None = None) -> None:
    def change(state: RulesState) -> tuple[list[WrittenRule], str]:
        rules = [w for w in state.rules if w.rule.name != new.rule.name]
        return [*rules, new], f"saved {new.rule.name}"

    change_rules(sieve, version, change)


def test_the_first_rule_of_an_account_without_a_script_is_its_own_active_script() -> None:
    sieve = MemorySieve()
    save(sieve, school())
    assert sieve.active == OWN_SCRIPT
    state = read_state(sieve)
    assert [w.rule.name for w in state.rules] == ["School"] and state.mode == "own"
    assert 'fileinto "School";' in sieve.scripts[OWN_SCRIPT]
    assert read_own_script(sieve.scripts[OWN_SCRIPT]) == state.rules


def test_the_users_active_script_includes_the_rules_and_keeps_every_byte_and_undo_restores_it() -> None:
    sieve = MemorySieve(scripts={"mine": USERS}, active="mine")
    save(sieve, school())
    mine = sieve.scripts["mine"]
    assert sieve.active == "mine" and BEGIN in mine and 'include :personal "mail-imap-mcp";' in mine
    start, end = find_section(mine) or (0, 0)
    assert mine[:start] + mine[end:] == USERS and start == after_requires(USERS)
    save(sieve, school("Teachers", "from:lehrer"))
    assert [w.rule.name for w in read_state(sieve).rules] == ["School", "Teachers"]

    state = read_state(sieve)
    undo(sieve, state)  # back to one rule
    assert [w.rule.name for w in read_state(sieve).rules] == ["School"]
    assert sieve.scripts["mine"] == mine
    undo(sieve, read_state(sieve))  # an undo of the undo redoes
    assert [w.rule.name for w in read_state(sieve).rules] == ["School", "Teachers"]


def test_undo_of_the_first_rule_gives_the_user_their_script_back_byte_for_byte() -> None:
    sieve = MemorySieve(scripts={"mine": USERS}, active="mine")
    save(sieve, school())
    undo(sieve, read_state(sieve))
    assert sieve.scripts["mine"] == USERS and sieve.active == "mine"
    assert OWN_SCRIPT not in sieve.scripts and UNDO_SCRIPT in sieve.scripts


def test_without_include_the_rules_are_a_marked_section_of_the_users_script() -> None:
    extensions = " ".join(name for name in PIGEONHOLE_EXTENSIONS.split() if name != "include")
    sieve = MemorySieve(extensions=extensions, scripts={"mine": USERS}, active="mine")
    save(sieve, school())
    mine = sieve.scripts["mine"]
    assert OWN_SCRIPT not in sieve.scripts and 'fileinto "School";' in mine
    state = read_state(sieve)
    assert state.mode == "section" and [w.rule.name for w in state.rules] == ["School"]
    start, end = find_section(mine) or (0, 0)
    assert mine[:start] + mine[end:] == USERS
    undo(sieve, state)
    assert sieve.scripts["mine"] == USERS


def test_a_change_since_the_version_read_and_a_script_changed_by_hand_are_conflicts() -> None:
    sieve = MemorySieve(scripts={"mine": USERS}, active="mine")
    save(sieve, school())
    version = read_state(sieve).version
    sieve.scripts["mine"] += "# changed elsewhere\n"
    before = dict(sieve.scripts)
    with pytest.raises(RulesConflict) as raised:
        save(sieve, school("Teachers", "from:lehrer"), version)
    assert sieve.scripts == before
    with pytest.raises(RulesConflict) as raised:  # undo would lose that change
        undo(sieve, read_state(sieve))
    assert sieve.scripts == before

    sieve.scripts[OWN_SCRIPT] += "keep;\n"  # the rules' script changed by hand
    before = dict(sieve.scripts)
    with pytest.raises(RulesConflict) as raised:
        save(sieve, school("Teachers", "from:lehrer"))
    assert "changed outside this tool" in raised.value.reason and sieve.scripts == before


def test_a_script_the_server_refuses_is_its_verdict_in_its_words_and_nothing_changed() -> None:
    sieve = MemorySieve(extensions="fileinto")  # no imap4flags
    with pytest.raises(ScriptRefused) as raised:
        save(sieve, school())
    assert "imap4flags" in raised.value.said
    assert sieve.scripts == {} and sieve.active is None


def test_turning_a_rule_off_comments_its_block_out_and_on_again_restores_it() -> None:
    from dataclasses import replace

    sieve = MemorySieve()
    save(sieve, school())
    on = sieve.scripts[OWN_SCRIPT]

    def turn(enabled: bool) -> None:
        change_rules(
            sieve,
            None,
            lambda s: ([replace(w, rule=replace(w.rule, enabled=enabled)) for w in s.rules], "turn"),
        )

    turn(False)
    assert "\nif " not in sieve.scripts[OWN_SCRIPT] and "#- if " in sieve.scripts[OWN_SCRIPT]
    assert read_state(sieve).rules[0].rule.enabled is False
    turn(True)
    assert sieve.scripts[OWN_SCRIPT] == on


def test_a_vacation_rule_of_several_lines_reads_back_as_written_on_and_off() -> None:
    """The reply's text runs over lines inside one Sieve string: the script reads back into the same rule,
    turned off (each line commented out, so no string opens) and on again, byte for byte."""
    from dataclasses import replace

    away = Vacation(
        "Away", "I am away.\nBack on Monday.\n\n-- \nAnn", 7, ("boss@example.org", "@allowed.test")
    )
    condition = sieve_condition(parse("from:@", today=date(2026, 11, 29)).tree)
    written = compile_rule(Rule("Away", "from:@", vacation=away), condition)
    text = own_script([written])
    assert read_own_script(text) == [written] and text.count("\n#- ") == 0
    off = replace(written, rule=replace(written.rule, enabled=False))
    commented = own_script([off])
    assert all(line.startswith(("#", "require ")) for line in commented.splitlines())
    assert read_own_script(commented) == [off]
    assert own_script(read_own_script(commented)) == commented


def test_the_insertion_point_is_after_the_users_requires() -> None:
    assert after_requires("") == 0
    assert after_requires("if true { keep; }\n") == 0
    script = '# hi\nrequire "fileinto"; # x\nrequire ["a;b", "c"];\r\nif true {}\n'
    assert script[after_requires(script) :] == "if true {}\n"
    assert with_section("keep;", "X\n") == "X\nkeep;"
    assert with_section('require "x";', "X\n") == 'require "x";\nX\n'


def test_the_undo_record_of_a_large_script_fits_the_servers_limit_compressed() -> None:
    rules = "".join(
        f'if header :contains "subject" "topic {i}" {{\n  fileinto "Box{i}";\n}}\n' for i in range(100)
    )
    users = 'require ["fileinto"];\n' + rules
    assert 6_000 < len(users) < 8_000  # the fake's (and the test Dovecot's) limit: 8,000 bytes a script
    sieve = MemorySieve(scripts={"mine": users}, active="mine")
    save(sieve, school())
    assert len(sieve.scripts[UNDO_SCRIPT]) < 2_000
    undo(sieve, read_state(sieve))
    assert sieve.scripts["mine"] == users
