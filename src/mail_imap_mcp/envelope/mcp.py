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
import contextvars
import functools
import json
import logging
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeGuard, TypeVar

import anyio.from_thread
import anyio.to_thread
from mcp_types import AudioContent, CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

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
    new_request_id,
    utc_now_rfc3339,
)
from mail_imap_mcp.envelope.schemas import (
    envelope_output_schema,
    flat_input_schema,
    published_input_schema,
    validation_failure,
)
from mail_imap_mcp.sdk import InternalTool, no_argument_metadata
from mail_imap_mcp.state import ANONYMOUS, user_of

log = logging.getLogger("mail_imap_mcp.calls")

#: The request id of the tool call being handled (for logs written below the envelope layer).
current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)
#: For the handler's thread: ``report(done, total, message)`` sends the client a progress notification
#: for the tool call being handled (a no-op when the client asked for none).
progress_reporter: ContextVar[Callable[[int, int, str], None] | None] = ContextVar(
    "progress_reporter", default=None
)

InputT = TypeVar("InputT", bound=BaseModel)
DataT = TypeVar("DataT", bound=BaseModel)


#: A tool's handler: the validated arguments and the user the call is made for (the name the HTTP
#: transport's verified access token gives, :data:`~mail_imap_mcp.state.ANONYMOUS` for nobody).
Handler = Callable[[InputT, str], ToolResult[Any]]


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


#: Whether the client of the current call can ask its user (it declared MCP elicitation).
client_can_ask_user: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "client_can_ask_user", default=False
)
#: True while a call runs again because its user confirmed it through the client (elicitation).
user_confirmed: contextvars.ContextVar[bool] = contextvars.ContextVar("user_confirmed", default=False)
#: ``error.details`` key of a ``confirmation_required`` failure that only the user can answer.
ASK_USER = "ask_user"


class EnvelopeTool(InternalTool):
    """An ``MCPServer`` tool whose every result is an envelope.

    The SDK's own argument validation is bypassed (it would answer with plain text); the tool
    validates against its input model and answers with an ``invalid_input`` envelope instead.
    Handlers are synchronous and run on a worker thread, so blocking IMAP I/O never stalls the
    event loop and calls to different accounts proceed in parallel.
    """

    input_model: type[BaseModel] = Field(exclude=True)
    output_schema_doc: dict[str, Any] = Field(exclude=True)
    handler: Callable[[Any, str], ToolResult[Any]] = Field(exclude=True)
    multi_item: bool = Field(default=False, exclude=True)

    @functools.cached_property
    def output_schema(self) -> dict[str, Any] | None:
        return self.output_schema_doc

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        if context is not None and hasattr(context, "report_progress"):
            progress_reporter.set(_reporter(context))
        # Whose call it is (the HTTP transport's verified access token): handed to the handler.
        user = user_of(context)
        client_can_ask_user.set(_can_elicit(context))
        envelope, media = await self.answer(arguments, user)
        if _needs_confirmation(envelope) and _can_elicit(context):
            envelope = await self._confirm_by_elicitation(arguments, envelope, context, user)
        return _to_result(envelope, media)

    async def _confirm_by_elicitation(
        self, arguments: dict[str, Any], asked: FailureEnvelope, context: Any, user: str
    ) -> SuccessEnvelope[Any] | FailureEnvelope:
        """Ask the user through the client (MCP elicitation) instead of handing the agent a token.

        Accepted: the call runs again, with the token it was issued or, for what only the user may
        confirm (``ask_user``), marked as confirmed by the user. Declined or cancelled: nothing changed,
        and the envelope says so. A client that fails to ask leaves the token path as it was; where
        there is none, nothing changes.
        """
        details = asked.error.details
        question = f"{details.get('confirm', 'Confirm this change')}?"
        try:
            answer = await context.elicit(message=question, schema=Confirmation)
        except Exception:
            log.warning("tool=%s elicitation failed", self.name, exc_info=True)
            if "confirm_token" in details:
                return asked
            return self._unconfirmed(
                "The client could not ask the user to confirm; nothing was changed.", "error"
            )
        if answer.action == "accept" and answer.data.confirm:
            if "confirm_token" in details:
                return await self.envelope({**arguments, "confirm_token": details["confirm_token"]}, user)
            confirmed = user_confirmed.set(True)
            try:
                return await self.envelope(arguments, user)
            finally:
                user_confirmed.reset(confirmed)
        return self._unconfirmed(
            f"The user did not confirm ({answer.action}); nothing was changed.", answer.action
        )

    def _unconfirmed(self, message: str, elicitation: str) -> FailureEnvelope:
        failure = ToolFailure(
            ErrorCode.CONFIRMATION_REQUIRED, message, details={"elicitation": elicitation}, retryable=False
        )
        return self._failure(new_request_id(), time.perf_counter(), failure)

    async def invoke(self, arguments: dict[str, Any], user: str = ANONYMOUS) -> CallToolResult:
        """Run the tool on raw arguments for ``user`` and return the envelope as a ``CallToolResult``."""
        return _to_result(*await self.answer(arguments, user))

    async def envelope(
        self, arguments: dict[str, Any], user: str = ANONYMOUS
    ) -> SuccessEnvelope[Any] | FailureEnvelope:
        """Run the tool on raw arguments for ``user`` and return the envelope model."""
        envelope, _ = await self.answer(arguments, user)
        return envelope

    async def answer(
        self, arguments: dict[str, Any], user: str = ANONYMOUS
    ) -> tuple[SuccessEnvelope[Any] | FailureEnvelope, list[MediaBlock]]:
        """Run the tool on raw arguments for ``user``: the envelope model, and the media blocks of a
        success."""
        request_id = new_request_id()
        current_request_id.set(request_id)  # the handler's thread sees it (anyio copies the context)
        started = time.perf_counter()
        try:
            try:
                args = self.input_model.model_validate(arguments)
            except ValidationError as exc:
                raise validation_failure(exc, flat_input_schema(self.input_model)) from None
            result = await anyio.to_thread.run_sync(self.handler, args, user)
        except ToolFailure as failure:
            return self._failure(request_id, started, failure), []
        except Exception:
            log.exception("tool=%s request_id=%s unexpected failure", self.name, request_id)
            internal = ToolFailure(
                ErrorCode.INTERNAL,
                f"Unexpected internal error; the server log has the details under request id {request_id}.",
                details={"request_id": request_id},
            )
            return self._failure(request_id, started, internal), []
        meta = _meta(request_id, started, result.warnings)
        log.info("tool=%s request_id=%s success=true duration_ms=%d", self.name, request_id, meta.duration_ms)
        return SuccessEnvelope[Any](summary=result.summary, data=result.data, meta=meta), result.media

    def _failure(self, request_id: str, started: float, failure: ToolFailure) -> FailureEnvelope:
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
        summary = _one_line(f"{self.title or self.name} failed ({failure.code}): {failure.message}")
        return FailureEnvelope(summary=summary, data=data, error=failure.to_error(), meta=meta)


def _reporter(context: Any) -> Callable[[int, int, str], None]:
    def report(done: int, total: int, message: str) -> None:
        try:  # called from the handler's worker thread
            anyio.from_thread.run(context.report_progress, done, total, message or None)
        except Exception:
            log.debug("progress notification not sent", exc_info=True)

    return report


class Confirmation(BaseModel):
    """What a client shows the user when a tool asks for confirmation."""

    confirm: bool = Field(description="Yes, do it.")


def _needs_confirmation(envelope: SuccessEnvelope[Any] | FailureEnvelope) -> TypeGuard[FailureEnvelope]:
    return (
        isinstance(envelope, FailureEnvelope)
        and envelope.error.code == ErrorCode.CONFIRMATION_REQUIRED
        and ("confirm_token" in envelope.error.details or bool(envelope.error.details.get(ASK_USER)))
    )


def _can_elicit(context: Any) -> bool:
    capabilities = getattr(context, "client_capabilities", None) if context is not None else None
    return getattr(capabilities, "elicitation", None) is not None


def _one_line(text: str, limit: int = 240) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
    handler: Handler[InputT],
    other_data_models: tuple[type[BaseModel], ...] = (),
    read_only: bool = True,
    destructive: bool = False,
    idempotent: bool = True,
    open_world: bool = True,
) -> EnvelopeTool:
    """Build an :class:`EnvelopeTool` ready for ``MCPServer(tools=[...])``."""
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
    )


__all__ = [
    "EnvelopeTool",
    "MediaBlock",
    "NextAction",
    "ToolResult",
    "current_request_id",
    "envelope_tool",
    "progress_reporter",
]
