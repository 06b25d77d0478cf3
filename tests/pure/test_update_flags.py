"""imap_update_message_flags without a server: flag validation, the flags a change leads to, what
PERMANENTFLAGS allows, and the undo next_action."""

from __future__ import annotations

import pytest

from mail_imap_mcp.envelope import NextAction, ToolFailure
from mail_imap_mcp.imap.flags import not_permitted, ordered, parse_flags, target_flags
from mail_imap_mcp.imap.view import MailboxState
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.write_errors import InvalidFlag
from mail_imap_mcp.operations.batch import group_message_ids
from mail_imap_mcp.presentation.failures import envelope_of
from mail_imap_mcp.presentation.flag_undo import undo_flags
from mail_imap_mcp.state import ANONYMOUS_CALLER
from mail_imap_mcp.tools.update_message_flags import NAME
from mail_imap_mcp.tools.update_message_flags.models import FlagResult


def _undo(changed: list[FlagResult]) -> NextAction | None:
    return undo_flags(NAME, changed)


def parse_ids(message_ids: list[str]) -> list[MessageRef]:
    return [
        item.ref for item in group_message_ids(message_ids, lambda account: account, ANONYMOUS_CALLER).items
    ]


def test_flags_are_canonical_and_deduplicated_case_insensitively() -> None:
    assert parse_flags(["\\seen", "\\SEEN", "$Todo", "$todo", "\\Flagged", "a.b-c_1$"]) == (
        "\\Seen",
        "$Todo",
        "\\Flagged",
        "a.b-c_1$",
    )


@pytest.mark.parametrize(
    ("flag", "says"),
    [
        ("\\Deleted", "imap_apply_to_messages"),
        ("\\Recent", "server only"),
        ("\\*", "not a system flag"),
        ("\\Junk", "not a system flag"),
        ("NIL", "NIL"),
        ("a\r\nb", "not a keyword"),
        ("a b", "not a keyword"),
        ("k" * 51, "not a keyword"),
        ("", "not a keyword"),
        ("grüße", "not a keyword"),
    ],
)
def test_other_flags_are_invalid_input_naming_flags_and_saying_what_is_allowed(flag: str, says: str) -> None:
    with pytest.raises(InvalidFlag) as caught:
        parse_flags(["\\Seen", flag])
    failure = envelope_of(caught.value)  # the IMAP layer says what is wrong, the registry words it
    assert failure.code == "invalid_input" and failure.details["parameter"] == "flags"
    assert says in failure.message and "Allowed: the system flags" in failure.message
    assert "\r" not in failure.message and len(failure.message) < 400


def test_ids_are_deduplicated_in_order_and_of_one_account() -> None:
    refs = parse_ids(["imap:a:INBOX:7:2", "imap:a:Work:9:1", "imap:a:INBOX:7:2"])
    assert [ref.message_id for ref in refs] == ["imap:a:INBOX:7:2", "imap:a:Work:9:1"]
    with pytest.raises(ToolFailure) as caught:
        parse_ids(["imap:a:INBOX:7:2", "imap:b:INBOX:7:2"])
    assert caught.value.details["parameter"] == "message_ids"


def test_results_list_system_flags_first_then_keywords() -> None:
    assert ordered(["zeta", "\\Flagged", "$Alpha", "\\Deleted", "\\Seen", "\\seen"]) == [
        "\\Seen",
        "\\Flagged",
        "\\Deleted",
        "$Alpha",
        "zeta",
    ]


def test_target_flags_and_replace_keeps_deleted() -> None:
    before = ["\\Seen", "\\Deleted", "$Old"]
    assert target_flags("add", ["\\seen", "$New"], before) == ["\\Seen", "\\Deleted", "$New", "$Old"]
    assert target_flags("remove", ["\\SEEN", "$old"], before) == ["\\Deleted"]
    assert target_flags("replace", ["\\Flagged"], before) == ["\\Flagged", "\\Deleted"]


def state(permanent: frozenset[str] | None) -> MailboxState:
    return MailboxState("INBOX", 1, 2, 1, readonly=False, permanent_flags=permanent)


def test_permanentflags_decide_which_changes_are_possible() -> None:
    acl = state(frozenset({"\\Seen", "\\Deleted"}))
    assert not_permitted(acl, [], ["\\Seen"]) == []
    assert not_permitted(acl, ["$Old"], ["$Old", "\\Seen"]) == []  # $Old does not change
    assert not_permitted(acl, ["$Old"], ["\\Flagged"]) == ["\\Flagged", "$Old"]
    listed = state(frozenset({"\\Seen", "$Known"}))
    assert not_permitted(listed, [], ["$Known", "$New"]) == ["$New"]
    assert not_permitted(state(frozenset({"\\Seen", "\\*"})), [], ["$New"]) == []
    assert not_permitted(state(None), [], ["\\Flagged", "$New"]) == []


def result(uid: int, before: list[str], after: list[str]) -> FlagResult:
    return FlagResult(
        message_id=f"imap:a:INBOX:1:{uid}",
        mailbox="INBOX",
        uid=uid,
        flags=after,
        previous_flags=before,
        changed=True,
    )


def test_undo_is_one_call_when_every_message_changed_alike() -> None:
    undo = _undo([result(1, [], ["\\Seen", "$Todo"]), result(2, ["$Old"], ["\\Seen", "$Old", "$Todo"])])
    assert undo is not None
    assert undo.arguments == {
        "message_ids": ["imap:a:INBOX:1:1", "imap:a:INBOX:1:2"],
        "operation": "remove",
        "flags": ["\\Seen", "$Todo"],
    }
    undo = _undo([result(1, ["\\Seen"], [])])
    assert undo is not None and undo.arguments["operation"] == "add"
    # A replace: the same flags before everywhere -> replace with them (\Deleted is not ours to set).
    undo = _undo(
        [result(1, ["\\Seen", "\\Deleted"], ["\\Flagged", "\\Deleted"]), result(2, ["\\Seen"], ["\\Flagged"])]
    )
    assert (
        undo is not None
        and undo.arguments["operation"] == "replace"
        and undo.arguments["flags"] == ["\\Seen"]
    )
    # Different changes per message, or a flag this tool does not set: no single undo.
    assert _undo([result(1, [], ["\\Seen"]), result(2, ["\\Seen"], [])]) is None
    assert _undo([result(1, ["odd keyword!"], ["\\Flagged"])]) is None
    assert _undo([]) is None
