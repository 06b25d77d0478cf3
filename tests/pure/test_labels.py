"""Gmail labels as the label writes spell them, compute them and undo them (no server)."""

from __future__ import annotations

from dataclasses import dataclass

from mail_imap_mcp.envelope import NextAction
from mail_imap_mcp.imap.personality.gmail import label_names_of, shown_labels
from mail_imap_mcp.operations.labels import label_names, target_labels
from mail_imap_mcp.presentation.flag_undo import undo_labels


@dataclass
class Result:
    message_id: str
    flags: list[str]
    previous_flags: list[str]
    labels: list[str] | None
    previous_labels: list[str] | None
    new_message_id: str | None = None
    changed: bool = True


def test_labels_are_spelled_as_x_gm_labels_names_them_and_shown_as_summaries_show_them() -> None:
    assert label_names(["Inbox", "\\inbox", " Work ", "Starred", "important", "Work"]) == (
        "\\Inbox", "Work", "\\Starred", "\\Important"
    )  # fmt: skip
    shown = shown_labels(["\\Inbox", "\\Starred", "Work", "\\Sent", "\\Draft", "Work"])
    assert shown == ["Draft", "Inbox", "Sent", "Work"]


def test_x_gm_labels_are_read_once_for_writes_summaries_and_the_index() -> None:
    """One reading (personality/gmail.py): a label that reads as a number is its name, a quoted or
    modified UTF-7 one is decoded."""
    answer: dict[bytes, object] = {b"X-GM-LABELS": (b"\\Inbox", 2026, b"Caf&AOk-", "Two words")}
    assert label_names_of(answer) == ["\\Inbox", "2026", "Caf\u00e9", "Two words"]
    assert label_names_of({b"FLAGS": ()}) == []


def test_add_remove_replace() -> None:
    assert target_labels("add", ["Work"], ["\\Inbox"]) == ["\\Inbox", "Work"]
    assert target_labels("add", ["Work"], ["Work"]) == ["Work"]
    assert target_labels("remove", ["\\Inbox"], ["\\Inbox", "Work"]) == ["Work"]
    assert target_labels("replace", ["Home"], ["\\Inbox", "Work"]) == ["Home"]


def test_the_undo_names_each_message_where_it_is_now() -> None:
    archived = Result("imap:a:INBOX:1:5", [], [], ["Work"], ["Inbox", "Work"], "imap:a:[Gmail]/All Mail:2:9")
    kept = Result("imap:a:INBOX:1:6", [], [], ["Work"], ["Inbox", "Work"], "imap:a:[Gmail]/All Mail:2:10")
    undo = undo_labels("t", [archived, kept], with_flags=None)
    assert undo is not None and undo.arguments == {
        "message_ids": ["imap:a:[Gmail]/All Mail:2:9", "imap:a:[Gmail]/All Mail:2:10"],
        "operation": "add",
        "labels": ["Inbox"],
    }
    gained = Result("imap:a:INBOX:1:7", [], [], ["Inbox", "Receipts"], ["Inbox"])
    undo = undo_labels("t", [gained], with_flags=None)
    assert undo is not None and (undo.arguments["operation"], undo.arguments["labels"]) == (
        "remove",
        ["Receipts"],
    )


def test_mixed_changes_are_undone_by_a_replace_when_all_had_the_same_labels_else_not_at_all() -> None:
    one = Result("m1", [], [], ["A"], ["B", "C"])
    two = Result("m2", [], [], ["D"], ["B", "C"])
    undo = undo_labels("t", [one, two], with_flags=None)
    assert undo is not None and (undo.arguments["operation"], undo.arguments["labels"]) == (
        "replace",
        ["B", "C"],
    )
    three = Result("m3", [], [], ["D"], ["E"])
    assert undo_labels("t", [one, three], with_flags=None) is None


def test_flags_and_labels_are_undone_in_one_call_only_when_it_names_the_same_messages_the_same_way() -> None:
    both = Result("m1", ["\\Seen"], [], ["Inbox", "X"], ["Inbox"])
    flags = NextAction(
        instruction="Undo",
        tool="t",
        arguments={"message_ids": ["m1"], "operation": "remove", "flags": ["\\Seen"]},
    )
    undo = undo_labels("t", [both], with_flags=flags)
    assert undo is not None and undo.arguments == {
        "message_ids": ["m1"], "operation": "remove", "labels": ["X"], "flags": ["\\Seen"]
    }  # fmt: skip
    adding = NextAction(
        instruction="Undo",
        tool="t",
        arguments={"message_ids": ["m1"], "operation": "add", "flags": ["\\Seen"]},
    )
    assert undo_labels("t", [both], with_flags=adding) is None
    unchanged = Result("m1", ["\\Seen"], [], ["Inbox"], ["Inbox"])
    assert undo_labels("t", [unchanged], with_flags=flags) is flags
