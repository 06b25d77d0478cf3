"""The undo a flag change offers: the one call of imap_update_message_flags that puts the flags back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from mail_imap_mcp.envelope import NextAction
from mail_imap_mcp.imap.flags import DELETED, flag_keys, parse_flags
from mail_imap_mcp.mail.write_errors import InvalidFlag


class ChangedFlags(Protocol):
    """A message whose flags changed, as the tool reports it."""

    @property
    def message_id(self) -> str: ...
    @property
    def flags(self) -> list[str]: ...
    @property
    def previous_flags(self) -> list[str]: ...


class ChangedLabels(ChangedFlags, Protocol):
    """A message whose labels (Gmail) changed, as the tool reports it, with its id in All Mail where the
    change took it out of its mailbox."""

    @property
    def labels(self) -> list[str] | None: ...
    @property
    def previous_labels(self) -> list[str] | None: ...
    @property
    def new_message_id(self) -> str | None: ...
    @property
    def changed(self) -> bool: ...


def undo_labels(
    tool: str, changed: Sequence[ChangedLabels], *, with_flags: NextAction | None
) -> NextAction | None:
    """The call of ``tool`` that puts the labels back (by each message's id now: its All Mail id where it
    left its mailbox), and the flags too where ``with_flags`` undoes them with the same operation."""
    moved = [r for r in changed if r.labels != r.previous_labels]
    if not moved:
        return with_flags
    ids = [r.new_message_id or r.message_id for r in moved]
    deltas = {
        (
            tuple(sorted(set(r.labels or ()) - set(r.previous_labels or ()))),
            tuple(sorted(set(r.previous_labels or ()) - set(r.labels or ()))),
        )
        for r in moved
    }
    operation, labels = "", list[str]()
    if len(deltas) == 1:
        ((gained, lost),) = deltas
        operation, labels = ("remove", list(gained)) if gained and not lost else ("add", list(lost))
        if gained and lost:
            operation = ""
    if not operation:
        previous = {tuple(r.previous_labels or ()) for r in moved}
        if len(previous) != 1:
            return None
        operation, labels = "replace", list(next(iter(previous)))
    arguments: dict[str, object] = {"message_ids": ids, "operation": operation, "labels": labels}
    if with_flags is not None:  # one call undoes both where it names the same messages the same way
        same = set(with_flags.arguments["message_ids"]) == set(ids)
        if with_flags.arguments.get("operation") != operation or not same:
            return None
        arguments["flags"] = with_flags.arguments["flags"]
    what = " ".join(labels) or "no labels"
    return NextAction(
        instruction=f"Undo: {operation} labels {what} on the messages this call changed",
        tool=tool,
        arguments=arguments,
    )


def undo_flags(tool: str, changed: Sequence[ChangedFlags]) -> NextAction | None:
    """The call of ``tool`` that puts the flags back, when one call can: every changed message gained (or
    lost) the same flags, or all had the same flags before a replace."""
    if not changed:
        return None
    ids = [result.message_id for result in changed]
    deltas = {
        (
            tuple(sorted(flag_keys(r.flags) - flag_keys(r.previous_flags))),
            tuple(sorted(flag_keys(r.previous_flags) - flag_keys(r.flags))),
        )
        for r in changed
    }
    first = changed[0]
    if len(deltas) == 1:
        ((gained, lost),) = deltas
        if gained and not lost:
            return _undo_action(tool, ids, "remove", [f for f in first.flags if f.lower() in gained])
        if lost and not gained:
            return _undo_action(tool, ids, "add", [f for f in first.previous_flags if f.lower() in lost])
    previous = {tuple(sorted(flag_keys(r.previous_flags) - {DELETED})) for r in changed}
    if len(previous) == 1:
        flags = [f for f in first.previous_flags if f.lower() != DELETED]
        if flags:
            return _undo_action(tool, ids, "replace", flags)
    return None


def _undo_action(tool: str, ids: list[str], operation: str, flags: list[str]) -> NextAction | None:
    try:
        parse_flags(flags)  # another client may have set a flag this tool does not set
    except InvalidFlag:
        return None
    return NextAction(
        instruction=f"Undo: {operation} {' '.join(flags)} on the messages this call changed",
        tool=tool,
        arguments={"message_ids": ids, "operation": operation, "flags": flags},
    )
