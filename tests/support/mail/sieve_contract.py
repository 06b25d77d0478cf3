"""The contract of ``mail/sieve.py``'s :class:`SieveScripts`: cases that run on the in-memory fake
(tests/pure/test_sieve_contract.py) and on Dovecot's Pigeonhole and Cyrus's timsieved over ManageSieve
(tests/integration/backends/test_sieve_contract.py), so the fake cannot drift from the servers. Each case
gets a fresh account's scripts and the :class:`Flavour` of its server: what the servers do differently,
measured (Pigeonhole 2.3.19, timsieved 3.6.1), named there rather than hidden in a case."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from mail_imap_mcp.mail import sieve_errors as refused_as
from mail_imap_mcp.mail.sieve import SieveScripts

#: The limits of the account every case runs on: scripts, bytes in all, bytes per script (the fake's and
#: the test Dovecot's; Cyrus counts no storage and its size limit is in KiB: 8 KiB).
LIMITS = {"max_scripts": 5, "max_storage": 20_000, "max_script_size": 8_000}
ODD_NAMES = ['say "hi"', "back\\slash", "Grüße & ünïcödé", "with  spaces", "a:b*?%", ".hidden", "x" * 150]


@dataclass(frozen=True)
class Flavour:
    """How a server's ManageSieve differs where the contract lets it."""

    #: Verdicts in Pigeonhole's words (else only the line: timsieved says ``line 2: syntax error``).
    pigeonhole_words: bool = True
    #: Whether it counts the bytes of every script against a storage quota.
    storage_quota: bool = True
    #: The response code of a script over the size limit (timsieved gives none).
    size_code: str = "QUOTA/MAXSIZE"
    max_script_size: int = LIMITS["max_script_size"]
    #: The odd names it keeps as given (timsieved drops from a ``"`` on, drops ``\\``, lists a non-ASCII
    #: name as an RFC 2047 encoded word, and takes a name of 150 characters that SETACTIVE then cannot find).
    names_kept: tuple[str, ...] = tuple(ODD_NAMES)
    #: Whether a script may be replaced when the account holds the most scripts (timsieved: no).
    replaces_at_the_limit: bool = True


PIGEONHOLE = Flavour()
TIMSIEVED = Flavour(
    pigeonhole_words=False,
    storage_quota=False,
    size_code="",
    max_script_size=8 * 1024,
    names_kept=tuple(ODD_NAMES[3:6]),
    replaces_at_the_limit=False,
)

FILE_NEWSLETTERS = (
    'require "fileinto";\r\nif header :contains "list-id" "news" {\r\n  fileinto "Newsletters";\r\n}\r\n'
)
KEEP = "keep;\r\n"


def _names(scripts: SieveScripts) -> dict[str, bool]:
    return {entry.name: entry.active for entry in scripts.list_scripts()}


def put_get_and_list(scripts: SieveScripts, flavour: Flavour) -> None:
    assert scripts.list_scripts() == []
    assert scripts.put_script("rules", FILE_NEWSLETTERS) == ""
    scripts.put_script("mine", "# Grüße\nkeep;\n")
    assert _names(scripts) == {"rules": False, "mine": False}
    assert scripts.get_script("rules") == FILE_NEWSLETTERS  # byte for byte, CRLF kept
    assert scripts.get_script("mine") == "# Grüße\nkeep;\n"  # LF and UTF-8 kept too
    scripts.put_script("rules", KEEP)  # replaces
    assert scripts.get_script("rules") == KEEP and len(scripts.list_scripts()) == 2


def list_and_get_in_one_round_trip(scripts: SieveScripts, flavour: Flavour) -> None:
    """LISTSCRIPTS and GETSCRIPTs pipelined: every answer read in order, a missing script left out, and
    the session goes on (its next command answered as its own)."""
    assert scripts.list_and_get(["rules", "mine"]) == ([], {})
    scripts.put_script("rules", FILE_NEWSLETTERS)
    scripts.put_script("mine", "# Grüße\nkeep;\n")
    scripts.activate("mine")
    entries, texts = scripts.list_and_get(["nope", "rules", "mine", "also nope"])
    assert {entry.name: entry.active for entry in entries} == {"rules": False, "mine": True}
    assert texts == {"rules": FILE_NEWSLETTERS, "mine": "# Grüße\nkeep;\n"}
    assert scripts.get_script("rules") == FILE_NEWSLETTERS


def one_script_is_active_at_most(scripts: SieveScripts, flavour: Flavour) -> None:
    scripts.put_script("a", KEEP)
    scripts.put_script("b", KEEP)
    scripts.activate("a")
    assert _names(scripts) == {"a": True, "b": False}
    scripts.activate("b")
    assert _names(scripts) == {"a": False, "b": True}
    scripts.deactivate()
    assert _names(scripts) == {"a": False, "b": False}
    with pytest.raises(refused_as.ScriptMissing) as missing:
        scripts.activate("nope")
    assert missing.value.code == "NONEXISTENT" and missing.value.name == "nope"


def delete_and_the_active_script_refused(scripts: SieveScripts, flavour: Flavour) -> None:
    scripts.put_script("gone", KEEP)
    scripts.put_script("in use", KEEP)
    scripts.delete_script("gone")
    assert _names(scripts) == {"in use": False}
    for missing in (lambda: scripts.delete_script("gone"), lambda: scripts.get_script("gone")):
        with pytest.raises(refused_as.ScriptMissing):
            missing()
    scripts.activate("in use")
    with pytest.raises(refused_as.ScriptActive) as refused:
        scripts.delete_script("in use")
    assert refused.value.code == "ACTIVE" and "active" in refused.value.said.lower()
    assert _names(scripts) == {"in use": True}  # nothing changed


def rename_keeps_the_active_one_active(scripts: SieveScripts, flavour: Flavour) -> None:
    assert scripts.capabilities().checks_and_renames
    scripts.put_script("old", FILE_NEWSLETTERS)
    scripts.put_script("other", KEEP)
    scripts.activate("old")
    scripts.rename_script("old", "new")
    assert _names(scripts) == {"new": True, "other": False}
    assert scripts.get_script("new") == FILE_NEWSLETTERS
    with pytest.raises(refused_as.ScriptExists) as exists:
        scripts.rename_script("new", "other")
    assert exists.value.code == "ALREADYEXISTS"
    with pytest.raises(refused_as.ScriptMissing):
        scripts.rename_script("old", "again")


#: Bad scripts and what each verdict must hold (Pigeonhole's words, the fake's the same).
BAD_SCRIPTS = [
    ('keep;\r\nfileinot "x";\r\n', ["line 2: error: unknown command 'fileinot'", "validation failed"]),
    ('fileinto "x";\r\n', ["line 1: error: unknown command 'fileinto'", "validation failed"]),
    ("if foo { keep; }\r\n", ["line 1: error: unknown test 'foo'", "validation failed"]),
    ('require "x-nope";\r\n', ["line 1: error: require command: unknown Sieve capability `x-nope'"]),
    ("keep", ["line 1: error: expected end of command ';'", "parse failed"]),
    (
        'if header :is "a" "b" {\r\n keep;\r\n',
        ["line 3: error: expected end of compound block '}'", "parse failed"],
    ),
]


def check_gives_the_servers_verdict(scripts: SieveScripts, flavour: Flavour) -> None:
    assert scripts.check_script(FILE_NEWSLETTERS) == ""
    for script, words in BAD_SCRIPTS:
        with pytest.raises(refused_as.ScriptRefused) as refused:
            scripts.check_script(script)
        expected = words if flavour.pigeonhole_words else [words[0].partition(" error:")[0]]  # the line
        assert all(word in refused.value.said for word in expected), (script, refused.value.said)
        with pytest.raises(refused_as.ScriptRefused):
            scripts.put_script("bad", script)
    assert scripts.list_scripts() == []  # nothing stored


def quotas_are_refused_with_their_codes(scripts: SieveScripts, flavour: Flavour) -> None:
    with pytest.raises(
        refused_as.SieveQuotaExceeded if flavour.size_code else refused_as.SieveRefused
    ) as too_large:
        scripts.put_script("big", "#" * (flavour.max_script_size + 1) + "\r\nkeep;\r\n")
    assert too_large.value.code == flavour.size_code and too_large.value.said
    if flavour.size_code:  # timsieved says OK to a HAVESPACE of any size
        with pytest.raises(refused_as.SieveQuotaExceeded):
            scripts.have_space("big", flavour.max_script_size + 1)
    scripts.have_space("small", 100)
    for n in range(LIMITS["max_scripts"]):
        scripts.put_script(f"s{n}", KEEP)
    with pytest.raises(refused_as.SieveQuotaExceeded) as too_many:
        scripts.put_script("one more", KEEP)
    assert too_many.value.code == "QUOTA/MAXSCRIPTS"
    if flavour.replaces_at_the_limit:
        scripts.put_script("s0", FILE_NEWSLETTERS)  # replacing one is no new script
    else:
        with pytest.raises(refused_as.SieveQuotaExceeded):
            scripts.put_script("s0", FILE_NEWSLETTERS)
    assert len(scripts.list_scripts()) == LIMITS["max_scripts"]


def storage_quota_counts_every_script(scripts: SieveScripts, flavour: Flavour) -> None:
    """Three scripts whose bytes together pass the storage quota: the third is refused where the server
    counts storage, and kept where it counts none (Cyrus: then only the count of scripts bounds them)."""
    part = "#" * (LIMITS["max_script_size"] - 100) + "\r\nkeep;\r\n"
    scripts.put_script("a", part)
    scripts.put_script("b", part)
    if not flavour.storage_quota:
        scripts.put_script("c", part)
        assert sorted(_names(scripts)) == ["a", "b", "c"] and scripts.get_script("c") == part
        return
    with pytest.raises(refused_as.SieveQuotaExceeded) as full:
        scripts.put_script("c", part)
    assert full.value.code.startswith("QUOTA")
    assert sorted(_names(scripts)) == ["a", "b"]


def names_with_odd_characters(scripts: SieveScripts, flavour: Flavour) -> None:
    for name in flavour.names_kept:
        scripts.put_script(name, KEEP)
        scripts.activate(name)
        assert _names(scripts) == {name: True} and scripts.get_script(name) == KEEP
        scripts.deactivate()
        scripts.delete_script(name)
    for bad in ("", "line\r\nbreak", "nul\0", "tab\there", "a/b", "..", "x" * 201):
        with pytest.raises(refused_as.ScriptNameInvalid):
            scripts.put_script(bad, KEEP)
    with pytest.raises(refused_as.ScriptTextInvalid):
        scripts.put_script("nul", "keep;\0")
    assert scripts.list_scripts() == []


def capabilities_name_the_sieve_extensions(scripts: SieveScripts, flavour: Flavour) -> None:
    offered = scripts.capabilities()
    assert all(offered.offers(name) for name in ("fileinto", "imap4flags", "include", "vacation", "body"))
    assert not offered.offers("x-nope") and offered.implementation


#: Every case, by name.
CASES: dict[str, Callable[[SieveScripts, Flavour], None]] = {
    case.__name__: case
    for case in (
        put_get_and_list,
        list_and_get_in_one_round_trip,
        one_script_is_active_at_most,
        delete_and_the_active_script_refused,
        rename_keeps_the_active_one_active,
        check_gives_the_servers_verdict,
        quotas_are_refused_with_their_codes,
        storage_quota_counts_every_script,
        names_with_odd_characters,
        capabilities_name_the_sieve_extensions,
    )
}
