"""A partial answer of every tool whose data carries issues (issue 78 item 2).

Each :class:`~mail_imap_mcp.envelope.MultiItemData` payload, partial with issues and with as many items as
a call could return, passes through the result-size bound the server runs after a handler
(:func:`~mail_imap_mcp.tool_calls.bound_result`), stays within the bound, keeps its issues and validates
against the tool's published output schema. A new such tool without a case here fails
:func:`test_every_tool_whose_data_carries_issues_has_a_case`.
"""

from __future__ import annotations

import enum
import json
import types
from collections.abc import Callable
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pytest
from pydantic import BaseModel

from mail_imap_mcp.envelope import Issue, Meta, MultiItemData, SuccessEnvelope, ToolResult
from mail_imap_mcp.envelope.schemas import envelope_output_schema
from mail_imap_mcp.presentation.result_size import RESULT_MAX_CHARS
from mail_imap_mcp.presentation.shapes import MessageSummary
from mail_imap_mcp.tool_calls import bound_result
from mail_imap_mcp.tools.list_mailboxes_models import Mailbox
from mail_imap_mcp.tools.registry import TOOLS
from mail_imap_mcp.tools.spec import ToolSpec
from tests.support.clients.envelope_client import validate

#: Issues of a partial answer, as a tool gives them (one with a uid and a message id).
ISSUES = [
    Issue(
        code="status_failed", stage="status", message="STATUS failed for mailbox 'Private'.", retryable=True
    ),
    Issue(
        code="fetch_failed",
        stage="fetch_headers",
        message="The server refused FETCH for this message.",
        retryable=True,
        uid=7,
        message_id="imap:default:INBOX:1:7",
    ),
]


def sample(annotation: Any) -> Any:
    """The plainest value of ``annotation``: None where allowed, else the first choice or an empty one."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return sample(args[0])
    if origin in (Union, types.UnionType):
        return None if type(None) in args else sample(args[0])
    if origin is Literal:
        return args[0]
    if origin in (list, tuple, set, frozenset):
        return origin()
    if origin is dict:
        return {}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return next(iter(annotation))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return plainest(annotation)
    return {str: "x", bool: False, int: 1, float: 1.0}[annotation]


def plainest(model: type[BaseModel], **given: Any) -> Any:
    """An instance of ``model``: ``given``, and the plainest value of every other required field."""
    fields = {
        name: sample(field.annotation) for name, field in model.model_fields.items() if field.is_required()
    }
    return model.model_validate({**fields, **given})


def long_summaries(count: int) -> list[MessageSummary]:
    """A page of summaries whose snippets and subjects alone pass the bound."""
    return [
        plainest(
            MessageSummary,
            message_id=f"imap:default:INBOX:1:{uid}",
            uid=uid,
            subject="Re: the quarterly figures, as agreed " * 8,
            snippet="the figures follow below; see the notes " * 40,
        )
        for uid in range(1, count + 1)
    ]


def many_mailboxes(count: int) -> list[Mailbox]:
    return [
        plainest(Mailbox, name=f"Archive {n:04d} of the long-running projects", delimiter="/", messages=n)
        for n in range(count)
    ]


def summaries_page(data: Any) -> None:
    data.messages = long_summaries(200)
    data.returned = len(data.messages)


def mailbox_list(data: Any) -> None:
    data.mailboxes = many_mailboxes(3000)
    data.total = data.returned = len(data.mailboxes)


def as_it_comes(data: Any) -> None:
    """Data whose size its arguments bound (a window, one message, one draft): issues alone."""


#: Per tool whose data carries issues: how its largest partial answer is filled in.
FILLS: dict[str, Callable[[Any], None]] = {
    "imap_list_mailboxes": mailbox_list,
    "imap_search_messages": summaries_page,
    "imap_get_thread": summaries_page,
    "imap_get_message": as_it_comes,
    "imap_get_attachment": as_it_comes,
    "imap_update_message_flags": as_it_comes,
    "imap_apply_to_messages": as_it_comes,
    "imap_manage_mailbox": as_it_comes,
    "imap_save_draft": as_it_comes,
    "imap_send_draft": as_it_comes,
}


def carries_issues(spec: ToolSpec[Any]) -> bool:
    return any(issubclass(model, MultiItemData) for model in (spec.data_model, *spec.other_data_models))


def test_every_tool_whose_data_carries_issues_has_a_case() -> None:
    assert set(FILLS) == {spec.name for spec in TOOLS if carries_issues(spec)}


@pytest.mark.parametrize("spec", [spec for spec in TOOLS if carries_issues(spec)], ids=lambda spec: spec.name)
def test_a_partial_answer_passes_the_bound_and_validates_against_the_output_schema(
    spec: ToolSpec[Any],
) -> None:
    data = plainest(spec.data_model, status="partial", issues=ISSUES)
    FILLS[spec.name](data)
    result = ToolResult(summary="partial", data=data)
    bound_result(spec, result)
    meta = Meta(request_id="r", now_utc="2026-11-28T09:00:00.000Z", duration_ms=0, warnings=result.warnings)
    envelope = SuccessEnvelope[Any](summary=result.summary, data=result.data, meta=meta)
    payload = envelope.model_dump(mode="json", by_alias=True)
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    assert len(text) <= RESULT_MAX_CHARS
    validate(envelope_output_schema(spec.data_model, *spec.other_data_models), payload)
    assert payload["data"]["status"] == "partial" and payload["data"]["issues"] == [
        issue.model_dump(mode="json") for issue in ISSUES
    ]
