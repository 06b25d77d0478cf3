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
from pathlib import Path
from typing import Annotated, Any, TypeGuard, TypeVar, Union

import anyio.from_thread
import anyio.to_thread
from mcp_types import AudioContent, CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

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
from mail_imap_mcp.sdk import InternalTool, no_argument_metadata

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


Handler = Callable[[InputT], ToolResult[Any]]


def flat_input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """JSON schema of ``model`` with no unions: ``X | None`` becomes ``X`` (omit = null).

    Some MCP clients reject ``anyOf``/``oneOf`` in an ``inputSchema``; our inputs are flat
    optional scalars, so the nullable branch carries no information a client needs.
    """
    schema: dict[str, Any] = json.loads(_flat_input_schema_json(model))
    return schema


# Schemas are a pure function of the models and cost pydantic about 20 ms per tool: every server a
# process builds (a test builds hundreds, an HTTP server one per session) reuses the first one's. Kept
# as JSON text, so that each caller gets its own copy: parsing it is several times cheaper than a
# deep copy of the dict.
@functools.cache
def _flat_input_schema_json(model: type[BaseModel]) -> str:
    return json.dumps(_flat_input_schema(model))


def _flat_input_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    for name, prop in schema.get("properties", {}).items():
        branches = prop.pop("anyOf", None)
        if branches is not None:
            concrete = [b for b in branches if b.get("type") != "null"]
            if len(concrete) != 1:
                raise TypeError(f"input field {name!r} must be a single type, got {branches}")
            prop.update(concrete[0])
            if prop.get("default", ...) is None:
                del prop["default"]
        prop.pop("title", None)
    if "$defs" in schema:
        raise TypeError(f"input model {model.__name__} must be flat (no nested models)")
    return schema


def envelope_output_schema(data_model: type[BaseModel], *other_shapes: type[BaseModel]) -> dict[str, Any]:
    """``outputSchema``: an object whose ``success`` selects the success or the failure shape.

    ``other_shapes``: further models ``data`` may have on success (e.g. a compact and a full shape
    chosen by an argument); the schema accepts any of them.
    """
    schema: dict[str, Any] = json.loads(_envelope_output_schema_json(data_model, *other_shapes))
    return schema


#: The outputSchemas generated ahead by ``python -m mail_imap_mcp.reference``, by data model names: pydantic
#: takes about 0.1 s to generate them, a tenth of the server's startup. tests/pure/test_protocol.py fails
#: when the file no longer matches the models; a model without an entry is generated as before.
OUTPUT_SCHEMAS_FILE = Path(__file__).with_name("output_schemas.json")


def output_schema_key(data_model: type[BaseModel], *other_shapes: type[BaseModel]) -> str:
    """The name of a tool's outputSchema in :data:`OUTPUT_SCHEMAS_FILE`."""
    return " ".join(f"{model.__module__}.{model.__qualname__}" for model in (data_model, *other_shapes))


@functools.cache
def _generated_ahead() -> dict[str, Any]:
    try:
        schemas: dict[str, Any] = json.loads(OUTPUT_SCHEMAS_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return schemas


@functools.cache
def _envelope_output_schema_json(data_model: type[BaseModel], *other_shapes: type[BaseModel]) -> str:
    ahead = _generated_ahead().get(output_schema_key(data_model, *other_shapes))
    return json.dumps(ahead if ahead is not None else generate_output_schema(data_model, *other_shapes))


def generate_output_schema(data_model: type[BaseModel], *other_shapes: type[BaseModel]) -> dict[str, Any]:
    """The outputSchema of :func:`envelope_output_schema`, generated from the models by pydantic."""
    data: Any = Union[(data_model, *other_shapes)] if other_shapes else data_model
    union = Annotated[
        Union[SuccessEnvelope[data], FailureEnvelope],  # noqa: UP007
        Field(discriminator="success"),
    ]
    schema = TypeAdapter(union).json_schema(mode="serialization")
    schema.pop("discriminator", None)
    if other_shapes:
        _order_data_shapes(schema, [*other_shapes, data_model])
    return {"type": "object", **_inline_single_use_definitions(schema)}


def _order_data_shapes(schema: dict[str, Any], shapes: list[type[BaseModel]]) -> None:
    """Put ``data``'s shapes in the given order (pydantic may order a union's members its own way)."""
    rank = {f"#/$defs/{shape.__name__}": index for index, shape in enumerate(shapes)}
    for name, definition in schema.get("$defs", {}).items():
        branches = definition.get("properties", {}).get("data", {}).get("anyOf")
        if name.startswith("SuccessEnvelope") and branches:
            branches.sort(key=lambda branch: rank.get(branch.get("$ref", ""), len(rank)))


#: Keywords that only annotate: a reference's siblings of these kinds can sit beside the definition
#: put in its place (the reference's own win: they describe the field, the definition its type).
_ANNOTATIONS = frozenset({"description", "title", "default", "examples"})
_DEFINITION = "#/$defs/"


def _inline_single_use_definitions(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each ``$defs`` entry referenced once put in place of its reference.

    Clients validate every result against the ``outputSchema`` (the Python SDK with jsonschema, for
    each call), and a validator pays for each ``$ref`` it follows: a registry lookup and one more level
    of descent, per message of a page. Inlining the definitions used once (the data payload, its
    summary, the envelopes) made a page's validation about a fifth cheaper, and the schema no
    larger. Definitions used more than once, and any that refers to itself, stay shared.
    """
    definitions: dict[str, Any] = schema.get("$defs", {})
    uses: dict[str, int] = {}

    def count(node: Any) -> None:
        if isinstance(node, dict):
            if (name := _definition_name(node)) is not None:
                uses[name] = uses.get(name, 0) + 1
            for value in node.values():
                count(value)
        elif isinstance(node, list):
            for value in node:
                count(value)

    count(schema)
    kept: set[str] = set()

    def expand(node: Any, inlining: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [expand(value, inlining) for value in node]
        if not isinstance(node, dict):
            return node
        if (name := _definition_name(node)) is not None:
            siblings = {key: value for key, value in node.items() if key != "$ref"}
            if uses.get(name) == 1 and name not in inlining and set(siblings) <= _ANNOTATIONS:
                return {**expand(definitions[name], (*inlining, name)), **siblings}
            kept.add(name)
        return {key: expand(value, inlining) for key, value in node.items() if key != "$defs"}

    inlined: dict[str, Any] = expand(schema, ())
    shared: dict[str, Any] = {}
    while pending := kept - shared.keys():
        for name in sorted(pending):
            shared[name] = expand(definitions[name], (name,))
    if shared:
        inlined["$defs"] = {name: shared[name] for name in definitions if name in shared}
    return inlined


def _definition_name(node: dict[str, Any]) -> str | None:
    """The ``$defs`` entry a schema node refers to, if it is a reference to one."""
    ref = node.get("$ref")
    return ref[len(_DEFINITION) :] if isinstance(ref, str) and ref.startswith(_DEFINITION) else None


_BOUNDS = (
    ("minimum", ">="),
    ("maximum", "<="),
    ("minLength", "length >="),
    ("maxLength", "length <="),
    ("pattern", "matching"),
    ("format", "format"),
)


def schema_constraints(prop: dict[str, Any]) -> list[str]:
    """The bounds a JSON-schema property declares, in words: ``['>= 1', '<= 100']``."""
    return [f"{word} {prop[key]}" for key, word in _BOUNDS if key in prop]


def _allowed(prop: dict[str, Any]) -> str:
    """Describe what a schema property accepts, for an actionable validation message."""
    if "enum" in prop:
        return "one of " + ", ".join(json.dumps(v) for v in prop["enum"])
    bounds = schema_constraints(prop)
    return str(prop.get("type", "value")) + (" " + ", ".join(bounds) if bounds else "")


def validation_failure(exc: ValidationError, schema: dict[str, Any]) -> ToolFailure:
    """Turn pydantic's errors into one ``invalid_input`` failure that names each parameter."""
    properties: dict[str, Any] = schema.get("properties", {})
    problems: list[dict[str, Any]] = []
    for err in exc.errors(include_url=False, include_input=False):
        loc = [str(part) for part in err["loc"]]
        parameter = loc[0] if loc else ""
        if err["type"] == "extra_forbidden":
            problems.append(
                {
                    "parameter": parameter,
                    "problem": "unknown parameter",
                    "allowed": "one of " + ", ".join(sorted(properties)),
                }
            )
        elif parameter in properties:
            problems.append(
                {"parameter": parameter, "problem": err["msg"], "allowed": _allowed(properties[parameter])}
            )
        else:
            # Model-level validators report cross-field problems; they name the fields themselves.
            problems.append({"parameter": err.get("ctx", {}).get("parameter", ""), "problem": err["msg"]})
    first = problems[0]
    parameter = first["parameter"]
    subject = f"'{parameter}'" if parameter else "arguments"
    message = f"Invalid {subject}: {first['problem']}"
    if "allowed" in first:
        message += f"; allowed: {first['allowed']}"
    if len(problems) > 1:
        message += f" (and {len(problems) - 1} more problem(s), see error.details.problems)"
    return ToolFailure(
        ErrorCode.INVALID_INPUT,
        message + ". Fix the argument and call again.",
        details={"parameter": parameter, "problems": problems},
    )


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
    handler: Callable[[Any], ToolResult[Any]] = Field(exclude=True)
    multi_item: bool = Field(default=False, exclude=True)

    @functools.cached_property
    def output_schema(self) -> dict[str, Any] | None:
        return self.output_schema_doc

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        if context is not None and hasattr(context, "report_progress"):
            progress_reporter.set(_reporter(context))
        client_can_ask_user.set(_can_elicit(context))
        envelope, media = await self.answer(arguments)
        if _needs_confirmation(envelope) and _can_elicit(context):
            envelope = await self._confirm_by_elicitation(arguments, envelope, context)
        return _to_result(envelope, media)

    async def _confirm_by_elicitation(
        self, arguments: dict[str, Any], asked: FailureEnvelope, context: Any
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
                return await self.envelope({**arguments, "confirm_token": details["confirm_token"]})
            confirmed = user_confirmed.set(True)
            try:
                return await self.envelope(arguments)
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

    async def invoke(self, arguments: dict[str, Any]) -> CallToolResult:
        """Run the tool on raw arguments and return the envelope as a ``CallToolResult``."""
        return _to_result(*await self.answer(arguments))

    async def envelope(self, arguments: dict[str, Any]) -> SuccessEnvelope[Any] | FailureEnvelope:
        """Run the tool on raw arguments and return the envelope model."""
        envelope, _ = await self.answer(arguments)
        return envelope

    async def answer(
        self, arguments: dict[str, Any]
    ) -> tuple[SuccessEnvelope[Any] | FailureEnvelope, list[MediaBlock]]:
        """Run the tool on raw arguments: the envelope model, and the media blocks of a success."""
        request_id = new_request_id()
        current_request_id.set(request_id)  # the handler's thread sees it (anyio copies the context)
        started = time.perf_counter()
        try:
            try:
                args = self.input_model.model_validate(arguments)
            except ValidationError as exc:
                raise validation_failure(exc, self.parameters) from None
            result = await anyio.to_thread.run_sync(self.handler, args)
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
    handler: Callable[[InputT], ToolResult[Any]],
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
        parameters=flat_input_schema(input_model),
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
    "envelope_output_schema",
    "envelope_tool",
    "flat_input_schema",
    "generate_output_schema",
    "output_schema_key",
    "progress_reporter",
    "validation_failure",
]
