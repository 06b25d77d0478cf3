"""The arguments of a run on a search (``query`` with ``mailbox``) refused before anything is asked of a
server, each naming the argument as the user wrote it."""

from __future__ import annotations

from typing import Any

import pytest

from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.presentation.bulk import check_flags, check_transfer, checked_search
from mail_imap_mcp.tools.apply_to_messages.models import ApplyToMessagesInput
from mail_imap_mcp.tools.update_message_flags.models import UpdateFlagsInput

ID = "imap:default:INBOX:1:1"


def _refused(call: Any, *args: Any) -> str:
    with pytest.raises(ToolFailure) as caught:
        call(*args)
    assert caught.value.code.value == "invalid_input"
    parameter: str = caught.value.details["parameter"]
    return parameter


@pytest.mark.parametrize(
    ("query", "mailbox", "parameter"),
    [
        ("from:news", None, "mailbox"),
        ("from:news", "*", "mailbox"),
        ("from:news in:trash", "INBOX", "query"),
        ("has:attachment from:news", "INBOX", "query"),
        ("filename:pdf", "INBOX", "query"),
    ],
)
def test_a_search_that_cannot_be_acted_on_is_refused_naming_the_argument(
    query: str, mailbox: str | None, parameter: str
) -> None:
    assert _refused(checked_search, query, mailbox) == parameter


def test_a_search_of_one_mailbox_is_parsed() -> None:
    mailbox, tree = checked_search("from:news older_than:1y", "INBOX")
    assert mailbox == "INBOX" and tree is not None


@pytest.mark.parametrize(
    ("arguments", "parameter"),
    [
        ({"message_ids": [ID], "query": "x", "mailbox": "INBOX", "action": "delete"}, "query"),
        ({"query": "x", "mailbox": "INBOX", "action": "delete", "permanent": True}, "permanent"),
        ({"query": "x", "mailbox": "INBOX", "action": "copy", "destination_mailbox": "A"}, "action"),
        ({"query": "x", "mailbox": "INBOX", "action": "archive"}, "action"),
        ({"query": "x", "mailbox": "INBOX", "action": "move"}, "destination_mailbox"),
        ({"action": "delete"}, "message_ids"),
    ],
)
def test_a_move_by_search_takes_move_or_delete_only(arguments: dict[str, Any], parameter: str) -> None:
    assert _refused(check_transfer, ApplyToMessagesInput.model_validate(arguments)) == parameter


@pytest.mark.parametrize(
    ("arguments", "parameter"),
    [
        (
            {"message_ids": [ID], "query": "x", "mailbox": "INBOX", "operation": "add", "flags": ["\\Seen"]},
            "query",
        ),
        ({"query": "x", "mailbox": "INBOX", "operation": "replace", "flags": ["\\Seen"]}, "operation"),
        ({"query": "x", "mailbox": "INBOX", "operation": "add", "labels": ["Work"]}, "operation"),
        ({"operation": "add", "flags": ["\\Seen"]}, "message_ids"),
    ],
)
def test_flags_by_search_are_added_or_removed_only(arguments: dict[str, Any], parameter: str) -> None:
    args = UpdateFlagsInput.model_validate(arguments)
    assert _refused(check_flags, args, tuple(args.flags)) == parameter
