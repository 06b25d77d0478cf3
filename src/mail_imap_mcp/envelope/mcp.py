"""Envelope tools for the MCP SDK's ``MCPServer``.

An :class:`EnvelopeTool` publishes a flat ``inputSchema`` generated from a pydantic input model
and an ``outputSchema`` that both its success and failure envelopes validate against. Every
call, including one whose arguments fail validation, returns a ``CallToolResult`` whose
``structuredContent`` is the envelope, whose first text block is the same envelope as compact
JSON, and whose ``isError`` is ``not success``. A successful result may carry media blocks (images,
audio) after the text block. Knows nothing about mail.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, TypeGuard, TypeVar

import anyio.from_thread
import anyio.to_thread
from mcp_types import (
    AudioContent,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    ImageContent,
    InputRequiredResult,
    TextContent,
    ToolAnnotations,
)
from pydantic import BaseModel, Field, InstanceOf, ValidationError

from mail_imap_mcp.envelope.call_context import current_request_id, progress_reporter
from mail_imap_mcp.envelope.client_context import asks_in_result, can_elicit, progress_asked, progress_sender
from mail_imap_mcp.envelope.model import (
    ErrorCode,
    FailureData,
    FailureEnvelope,
    MediaBlock,
    Meta,
    MultiItemData,
    NextAction,
    SuccessEnvelope,
    ToolFailure,
    ToolResult,
    failure_summary,
    new_request_id,
    utc_now_rfc3339,
)
from mail_imap_mcp.envelope.request_state import StateSeal
from mail_imap_mcp.envelope.schemas import (
    envelope_output_schema,
    flat_input_schema,
    published_input_schema,
    validation_failure,
)
from mail_imap_mcp.envelope.user_call import ASK_USER, UserCall, approval_digest, question
from mail_imap_mcp.envelope.user_page import PageFor, send_user_to
from mail_imap_mcp.sdk import InternalTool, no_argument_metadata
from mail_imap_mcp.state import ANONYMOUS, user_as_given, user_of

log = logging.getLogger("mail_imap_mcp.calls")


InputT = TypeVar("InputT", bound=BaseModel)
DataT = TypeVar("DataT", bound=BaseModel)


#: A tool's handler: the validated arguments, the user the call is made for (the name the HTTP
#: transport's verified access token gives, folded; :data:`~mail_imap_mcp.state.ANONYMOUS` for nobody)
#: and that name as the token spelled it (:func:`~mail_imap_mcp.state.user_as_given`).
Handler = Callable[..., ToolResult[Any]]


#: The model of every success, built once: pydantic keeps a parametrised generic model only weakly, so a
#: ``SuccessEnvelope[Any]`` written in a call built it again (fields, schema, validator: about a millisecond of
#: the event loop's time before the answer is written) whenever the collector had freed the last one.
AnySuccess = SuccessEnvelope[Any]


def _media_content(block: MediaBlock) -> ImageContent | AudioContent:
    encoded = base64.b64encode(block.data).decode("ascii")
    if block.mime_type.startswith("audio/"):
        return AudioContent(type="audio", data=encoded, mime_type=block.mime_type)
    if not block.mime_type.startswith("image/"):
        raise TypeError(f"no MCP content block for {block.mime_type!r}")
    return ImageContent(type="image", data=encoded, mime_type=block.mime_type)


def _to_result(envelope: BaseModel, media: list[MediaBlock] | None = None) -> CallToolResult:
    payload = envelope.model_dump(mode="json", by_alias=True)
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(
        content=[TextContent(type="text", text=text), *map(_media_content, media or [])],
        structured_content=payload,
        is_error=not payload["success"],
    )


#: How often one call may ask its user: a tool asks each of its questions before it changes anything, and
#: runs again from the start after each "yes".
MAX_QUESTIONS = 4


class EnvelopeTool(InternalTool):
    """An ``MCPServer`` tool whose every result is an envelope.

    The SDK's own argument validation is bypassed (it would answer with plain text); the tool
    validates against its input model and answers with an ``invalid_input`` envelope instead.
    Handlers are synchronous and run on a worker thread, so blocking IMAP I/O never stalls the
    event loop and calls to different accounts proceed in parallel.
    """

    input_model: type[BaseModel] = Field(exclude=True)
    output_schema_doc: dict[str, Any] = Field(exclude=True)
    handler: Callable[..., ToolResult[Any]] = Field(exclude=True)
    multi_item: bool = Field(default=False, exclude=True)
    #: The page a failure asks the user to visit (a sign-in), offered by URL elicitation or the browser.
    page_for: PageFor | None = Field(default=None, exclude=True)
    #: The handler takes the :class:`UserCall` as a fourth argument (how its call may ask its user).
    takes_call: bool = Field(default=False, exclude=True)
    #: Seals the ``request_state`` of a call that asks its user in its result (:mod:`.request_state`).
    state_seal: InstanceOf[StateSeal] = Field(default_factory=StateSeal, exclude=True)
    #: What a call's raw arguments ask for, as its failure's summary leads with it (None: the title).
    asked: Callable[[Mapping[str, Any]], str | None] | None = Field(default=None, exclude=True)

    @functools.cached_property
    def output_schema(self) -> dict[str, Any] | None:
        return self.output_schema_doc

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        if context is not None and hasattr(context, "report_progress"):
            progress_reporter.set(progress_sender(context))
        # Whose call it is (the HTTP transport's verified access token): handed to the handler.
        user, as_given = user_of(context), user_as_given(context)
        call = UserCall(
            user=user,
            as_given=as_given,
            can_ask_user=can_elicit(context),
            asks_in_result=asks_in_result(context),
            progress_asked=progress_asked(context),
        )
        envelope, media = await self.answer(arguments, user, as_given, call)
        if _needs_confirmation(envelope) and call.can_ask_user:
            if call.asks_in_result and envelope.error.details.get(ASK_USER):
                asked = await self._confirm_in_result(arguments, envelope, context, call)
                if isinstance(asked, InputRequiredResult):
                    return asked
                envelope = asked
            else:
                envelope = await self._confirm_by_elicitation(arguments, envelope, context, call)
        if isinstance(envelope, FailureEnvelope) and self.page_for is not None:
            page = await anyio.to_thread.run_sync(self.page_for, envelope)
            if page is not None:

                async def rerun() -> CallToolResult:
                    return _to_result(*await self.answer(arguments, user, as_given, call))

                sent = await send_user_to(page, envelope, context, rerun)
                return _to_result(sent) if isinstance(sent, FailureEnvelope) else sent
        return _to_result(envelope, media)

    async def _confirm_in_result(
        self, arguments: dict[str, Any], asked: FailureEnvelope, context: Any, call: UserCall
    ) -> SuccessEnvelope[Any] | FailureEnvelope | InputRequiredResult:
        """What only the user may confirm (``ask_user``), asked in the protocol that has no request back to the
        client (2026-07-28 on): the call answers with the question (an ``InputRequiredResult``) and the client
        calls again with the user's answer. Each question's key is its :func:`approval_digest`, so an answer
        approves exactly the question shown for these arguments; a question that changed since (the message
        to be sent changed) is asked anew. ``request_state`` carries the keys approved in earlier rounds of
        this call (the client's own answers; nothing the agent sends), sealed for this tool and caller until
        it expires (:mod:`.request_state`): any other state is refused, with nothing changed."""
        answers = context.input_responses or {}
        try:
            approved_keys = self.state_seal.open(context.request_state, self.name, call.user)
        except ToolFailure as refused:
            return self._failure(new_request_id(), time.perf_counter(), refused)
        approvals = call.approvals
        for _ in range(MAX_QUESTIONS):
            shown = question(asked.error.details.get("confirm", "Confirm this change"))
            digest = approval_digest(self.name, arguments, shown)
            key = f"confirm-{digest[:24]}"
            if key not in approved_keys:
                answer = answers.get(key)
                if not isinstance(answer, ElicitResult):
                    request = ElicitRequest(
                        params=ElicitRequestFormParams(message=shown, requested_schema=_CONFIRM_SCHEMA)
                    )
                    state = self.state_seal.seal(self.name, call.user, approved_keys)
                    return InputRequiredResult(input_requests={key: request}, request_state=state)
                if answer.action != "accept" or not (answer.content or {}).get("confirm"):
                    return self._unconfirmed(
                        f"The user did not confirm ({answer.action}); nothing was changed.", answer.action
                    )
                approved_keys.add(key)
            approvals |= {digest}
            envelope, _ = await self.answer(
                arguments, call.user, call.as_given, replace(call, approvals=approvals)
            )
            if not (_needs_confirmation(envelope) and envelope.error.details.get(ASK_USER)):
                return envelope
            asked = envelope
        return self._unconfirmed(
            f"The call asked the user more than {MAX_QUESTIONS} times; nothing more was done.", "error"
        )

    async def _confirm_by_elicitation(
        self, arguments: dict[str, Any], asked: FailureEnvelope, context: Any, call: UserCall
    ) -> SuccessEnvelope[Any] | FailureEnvelope:
        """Ask the user through the client (MCP elicitation) instead of handing the agent a token.

        Accepted: the call runs again, with the token it was issued or, for what only the user may
        confirm (``ask_user``), with the approval of exactly the question shown for these arguments
        (:func:`approval_digest`), which passes that gate alone: a gate that asks something else asks the
        user again (at most :data:`MAX_QUESTIONS` times). Declined or cancelled: nothing changed, and the
        envelope says so. A client that fails to ask leaves the token path as it was; where there is
        none, nothing changes.
        """
        approvals = call.approvals
        for _ in range(MAX_QUESTIONS):
            details = asked.error.details
            shown = question(details.get("confirm", "Confirm this change"))
            try:
                answer = await context.elicit(message=shown, schema=Confirmation)
            except Exception:
                log.warning("tool=%s elicitation failed", self.name, exc_info=True)
                if "confirm_token" in details:
                    return asked
                return self._unconfirmed(
                    "The client could not ask the user to confirm; nothing was changed.", "error"
                )
            if answer.action != "accept" or not answer.data.confirm:
                return self._unconfirmed(
                    f"The user did not confirm ({answer.action}); nothing was changed.", answer.action
                )
            if "confirm_token" in details:
                arguments = {**arguments, "confirm_token": details["confirm_token"]}
            else:
                approvals |= {approval_digest(self.name, arguments, shown)}
            envelope, _ = await self.answer(
                arguments, call.user, call.as_given, replace(call, approvals=approvals)
            )
            if not _needs_confirmation(envelope):
                return envelope
            asked = envelope
        return self._unconfirmed(
            f"The call asked the user more than {MAX_QUESTIONS} times; nothing more was done.", "error"
        )

    def _unconfirmed(self, message: str, elicitation: str) -> FailureEnvelope:
        failure = ToolFailure(
            ErrorCode.CONFIRMATION_REQUIRED, message, details={"elicitation": elicitation}, retryable=False
        )
        return self._failure(new_request_id(), time.perf_counter(), failure)

    async def envelope(
        self, arguments: dict[str, Any], user: str = ANONYMOUS, as_given: str = ANONYMOUS
    ) -> SuccessEnvelope[Any] | FailureEnvelope:
        """Run the tool on raw arguments for ``user`` (spelled ``as_given`` by their token) and return the
        envelope model."""
        envelope, _ = await self.answer(arguments, user, as_given)
        return envelope

    async def answer(
        self,
        arguments: dict[str, Any],
        user: str = ANONYMOUS,
        as_given: str = ANONYMOUS,
        call: UserCall | None = None,
    ) -> tuple[SuccessEnvelope[Any] | FailureEnvelope, list[MediaBlock]]:
        """Run the tool on raw arguments for ``user`` (spelled ``as_given`` by their token, that name
        when not given), as ``call`` may ask its user (nobody, unless given): the envelope model, and
        the media blocks of a success."""
        request_id = new_request_id()
        current_request_id.set(request_id)  # the handler's thread sees it (anyio copies the context)
        asking = replace(
            call or UserCall(), tool=self.name, arguments=arguments, user=user, as_given=as_given
        )
        started = time.perf_counter()
        try:
            try:
                args = self.input_model.model_validate(arguments)
            except ValidationError as exc:
                raise validation_failure(exc, flat_input_schema(self.input_model)) from None
            given = (
                (args, user, as_given or user, asking) if self.takes_call else (args, user, as_given or user)
            )
            result = await anyio.to_thread.run_sync(self.handler, *given)
        except ToolFailure as failure:
            return self._failure(request_id, started, failure, arguments), []
        except Exception:
            log.exception("tool=%s request_id=%s unexpected failure", self.name, request_id)
            internal = ToolFailure(
                ErrorCode.INTERNAL,
                f"Unexpected internal error; the server log has the details under request id {request_id}.",
                details={"request_id": request_id},
            )
            return self._failure(request_id, started, internal, arguments), []
        meta = _meta(request_id, started, result.warnings)
        log.info("tool=%s request_id=%s success=true duration_ms=%d", self.name, request_id, meta.duration_ms)
        return AnySuccess(summary=result.summary, data=result.data, meta=meta), result.media

    def _failure(
        self,
        request_id: str,
        started: float,
        failure: ToolFailure,
        arguments: Mapping[str, Any] | None = None,
    ) -> FailureEnvelope:
        meta = _meta(request_id, started, [])
        log.info(
            "tool=%s request_id=%s success=false code=%s duration_ms=%d",
            self.name,
            request_id,
            failure.code,
            meta.duration_ms,
        )
        data = FailureData(next_action=failure.next_action)
        if self.multi_item:
            data.status = "failed"
            data.issues = []
        asked = self.asked(arguments) if self.asked is not None and arguments is not None else None
        summary = failure_summary(asked or self.title or self.name, failure)
        return FailureEnvelope(summary=summary, data=data, error=failure.to_error(), meta=meta)


class Confirmation(BaseModel):
    """What a client shows the user when a tool asks for confirmation."""

    confirm: bool = Field(description="Yes, do it.")


def _needs_confirmation(envelope: SuccessEnvelope[Any] | FailureEnvelope) -> TypeGuard[FailureEnvelope]:
    return (
        isinstance(envelope, FailureEnvelope)
        and envelope.error.code == ErrorCode.CONFIRMATION_REQUIRED
        and ("confirm_token" in envelope.error.details or bool(envelope.error.details.get(ASK_USER)))
    )


_CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "description": "Yes, do it."}},
    "required": ["confirm"],
}


def _meta(request_id: str, started: float, warnings: list[str]) -> Meta:
    return Meta(
        request_id=request_id,
        now_utc=utc_now_rfc3339(),
        duration_ms=int((time.perf_counter() - started) * 1000),
        warnings=warnings,
    )


def envelope_tool(
    *,
    name: str,
    title: str,
    description: str,
    input_model: type[InputT],
    data_model: type[BaseModel],
    handler: Handler,
    other_data_models: tuple[type[BaseModel], ...] = (),
    read_only: bool = True,
    destructive: bool = False,
    idempotent: bool = True,
    open_world: bool = True,
    takes_call: bool = False,
    state_seal: StateSeal | None = None,
    asked: Callable[[Mapping[str, Any]], str | None] | None = None,
) -> EnvelopeTool:
    """Build an :class:`EnvelopeTool` ready for ``MCPServer(tools=[...])`` (``state_seal``: how it seals
    the ``request_state`` of its calls; under a key of this process unless given)."""
    return EnvelopeTool(
        fn=handler,
        name=name,
        title=title,
        description=description,
        parameters=published_input_schema(input_model),
        fn_metadata=no_argument_metadata(),
        is_async=False,
        context_kwarg=None,
        annotations=ToolAnnotations(
            title=title,
            read_only_hint=read_only,
            destructive_hint=destructive and not read_only,
            idempotent_hint=idempotent,
            open_world_hint=open_world,
        ),
        input_model=input_model,
        output_schema_doc=envelope_output_schema(data_model, *other_data_models),
        handler=handler,
        multi_item=issubclass(data_model, MultiItemData),
        takes_call=takes_call,
        state_seal=state_seal or StateSeal(),
        asked=asked,
    )


__all__ = [
    "ASK_USER",
    "EnvelopeTool",
    "MediaBlock",
    "NextAction",
    "ToolResult",
    "UserCall",
    "approval_digest",
    "current_request_id",
    "envelope_tool",
    "progress_reporter",
    "question",
]
