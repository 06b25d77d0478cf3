"""The server personality: which one a server gets, and what the standard one means (no server)."""

from __future__ import annotations

import pytest

from mail_imap_mcp.imap.personality import PERSONALITIES, Personality, Profile, personality_for
from mail_imap_mcp.imap.roles import TRASH
from mail_imap_mcp.imap.write_errors import ExtensionMissing


def standard(*capabilities: str) -> Personality:
    return personality_for(Profile.of(["IMAP4rev1", *capabilities]))


def test_every_server_of_the_matrix_gets_the_standard_personality_until_one_of_its_own_is_registered() -> (
    None
):
    assert PERSONALITIES == ()
    for capabilities in (("MOVE", "UIDPLUS", "SORT"), ("UIDPLUS",), ()):
        chosen = standard(*capabilities)
        assert type(chosen) is Personality and chosen.name == "standard"


def test_the_standard_personality_searches_with_imap_keys_and_deletes_to_the_trash() -> None:
    assert standard().search_dialects == ("imap",)
    assert standard().deletes_to == TRASH


@pytest.mark.parametrize(
    ("capabilities", "action", "permanent", "commands"),
    [
        (("MOVE", "UIDPLUS"), "move", False, "UID MOVE"),
        (("MOVE",), "delete", False, "UID MOVE"),
        (("UIDPLUS",), "move", False, "UID COPY + UID STORE +FLAGS.SILENT (\\Deleted) + UID EXPUNGE"),
        (("UIDPLUS",), "delete", True, "UID STORE +FLAGS.SILENT (\\Deleted) + UID EXPUNGE"),
        ((), "copy", False, "UID COPY"),
    ],
)
def test_the_commands_that_touch_exactly_the_messages_asked_for(
    capabilities: tuple[str, ...], action: str, permanent: bool, commands: str
) -> None:
    assert standard(*capabilities).transfer_commands(action, permanent=permanent) == commands  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("capabilities", "action", "permanent", "missing"),
    [((), "move", False, "MOVE or UIDPLUS"), (("MOVE",), "delete", True, "UIDPLUS")],
)
def test_without_the_extension_a_write_is_refused_before_anything_changes(
    capabilities: tuple[str, ...], action: str, permanent: bool, missing: str
) -> None:
    with pytest.raises(ExtensionMissing) as refused:
        standard(*capabilities).transfer_commands(action, permanent=permanent)  # type: ignore[arg-type]
    assert refused.value.capability == missing


def test_the_profile_names_the_sasl_mechanisms_offered_in_any_case_and_spelling() -> None:
    profile = Profile.of([b"IMAP4rev1", b"auth=xoauth2", "AUTH=PLAIN", "AUTHENTICATE", "UNSELECT"])
    assert profile.mechanisms == {"XOAUTH2", "PLAIN"}
    assert profile.offers_mechanism("xoauth2") and profile.offers_mechanism("PLAIN")
    assert not profile.offers_mechanism("OAUTHBEARER")
    assert Profile.of(["IMAP4rev1"]).mechanisms == frozenset()
    assert profile.unselects and not Profile.of(["IMAP4rev1"]).unselects
