"""A page the user must visit before a failed call can work (a sign-in at a third party), and how the
client is asked to take them there: MCP's URL-mode elicitation, in both protocol eras (a request to the
client during the call up to 2025-11-25; an ``input_required`` result the client answers by calling
again from 2026-07-28), where the client declares it; else the page's own fallback (the server opening
the browser). The page's URL goes into the elicitation alone: never into an envelope or a log line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

import anyio.to_thread
from mcp_types import ElicitRequest, ElicitRequestURLParams, InputRequiredResult
from mcp_types.version import is_version_at_least

from mail_imap_mcp.envelope.model import FailureEnvelope, one_line

log = logging.getLogger("mail_imap_mcp.calls")

#: The first protocol revision whose calls carry elicitation in an ``input_required`` result.
INPUT_REQUIRED_VERSION = "2026-07-28"
#: The key of the page's request in an ``input_required`` result.
PAGE_REQUEST = "user_page"
#: How long a call waits, once the user agreed to visit the page, for them to finish there.
PAGE_WAIT_S = 120.0


class UserPage(Protocol):
    """A page for the user, e.g. one account's sign-in attempt."""

    #: What the user is told, in the elicitation, of why to visit the page.
    message: str
    url: str
    #: Unique to this visit (the elicitation's id; the ``request_state`` of the call's retry).
    elicitation_id: str
    #: Appended to the failure's message when the server opened the page in the browser itself.
    opened_note: str
    #: The failure's message once the page is open to the user (shown by the client, or opened in their
    #: browser): what to do there, in place of any other way (a terminal command the user may not have).
    offered_message: str
    #: The next call's instruction then.
    offered_instruction: str

    def finished(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the visit to end (longer once only the server's part is left);
        whether the user did what the call needs."""
        ...

    def open_browser(self) -> bool:
        """Open the page in the user's browser where the server may; whether it was opened now."""
        ...

    @property
    def open_to_user(self) -> bool:
        """Whether the page was opened in the user's browser before (and still waits for them)."""
        ...


#: The page a failure asks the user to visit, if any (blocking: run on a worker thread).
PageFor = Callable[[FailureEnvelope], UserPage | None]
#: Runs the call again: its new envelope.
Rerun = Callable[[], Any]


def can_elicit_url(context: Any) -> bool:
    capabilities = getattr(context, "client_capabilities", None) if context is not None else None
    elicitation = getattr(capabilities, "elicitation", None)
    return getattr(elicitation, "url", None) is not None


def _input_required_era(context: Any) -> bool:
    version = getattr(context, "protocol_version", None)
    return isinstance(version, str) and is_version_at_least(version, INPUT_REQUIRED_VERSION)


def noted(failure: FailureEnvelope, note: str | None = None, **details: Any) -> FailureEnvelope:
    """``failure`` with ``details`` added (and ``note`` appended to its message)."""
    error = failure.error.model_copy(
        update={
            "details": {**failure.error.details, **details},
            "message": f"{failure.error.message} {note}" if note else failure.error.message,
        }
    )
    return failure.model_copy(update={"error": error})


def offered(
    failure: FailureEnvelope, page: UserPage, note: str | None = None, **details: Any
) -> FailureEnvelope:
    """``failure`` as said once ``page`` is open to the user: the page's message (``note`` appended) and
    next instruction, ``details`` added, its ``command`` dropped (the page is the way)."""
    kept = {key: value for key, value in failure.error.details.items() if key != "command"}
    message = f"{page.offered_message} {note}" if note else page.offered_message
    error = failure.error.model_copy(update={"details": {**kept, **details}, "message": message})
    data = failure.data
    if data.next_action is not None:
        action = data.next_action.model_copy(update={"instruction": page.offered_instruction})
        data = data.model_copy(update={"next_action": action})
    summary = one_line(f"{failure.summary.partition('): ')[0]}): {message}")
    return failure.model_copy(update={"summary": summary, "error": error, "data": data})


async def send_user_to(
    page: UserPage, failure: FailureEnvelope, context: Any, rerun: Rerun
) -> FailureEnvelope | InputRequiredResult | Any:
    """Take the user to ``page`` for a call that answered ``failure``: the call's answer once they
    visited it (run again by ``rerun``), an ``input_required`` result asking the client to show it, or
    ``failure`` saying what happened (``details.elicitation``: the user's answer; ``details.browser_opened``)."""
    if await anyio.to_thread.run_sync(page.finished, 0.0):  # the user was done there a moment ago
        return await rerun()
    if can_elicit_url(context):
        if _input_required_era(context):
            state = getattr(context, "request_state", None)
            if state is None:
                request = ElicitRequest(params=ElicitRequestURLParams(message=page.message, url=page.url))
                return InputRequiredResult(
                    input_requests={PAGE_REQUEST: request}, request_state=page.elicitation_id
                )
            response = (getattr(context, "input_responses", None) or {}).get(PAGE_REQUEST)
            action = str(getattr(response, "action", "cancel"))
            if state != page.elicitation_id:  # the page shown has gone (ended): never ask again
                return noted(failure, elicitation=action)
        else:
            try:
                answer = await context.elicit_url(page.message, page.url, page.elicitation_id)
            except Exception as exc:  # a client that declared URL mode and then failed it
                log.warning("the client could not show the user a page (%s)", type(exc).__name__)
                return await _open_browser(page, failure, rerun)
            action = answer.action
        if action == "accept" and await anyio.to_thread.run_sync(page.finished, PAGE_WAIT_S):
            await _tell_completed(context, page)
            return await rerun()
        if action == "accept":  # the page stays open to them
            return offered(failure, page, elicitation=action)
        return noted(failure, elicitation=action)
    return await _open_browser(page, failure, rerun)


async def _open_browser(page: UserPage, failure: FailureEnvelope, rerun: Rerun) -> Any:
    opened = await anyio.to_thread.run_sync(page.open_browser)
    if opened or page.open_to_user:
        return offered(failure, page, page.opened_note if opened else None, browser_opened=opened)
    return noted(failure, browser_opened=opened)


async def _tell_completed(context: Any, page: UserPage) -> None:
    """``notifications/elicitation/complete`` (up to 2025-11-25; the retry says it after)."""
    if _input_required_era(context):
        return
    try:
        await context.session.send_elicit_complete(page.elicitation_id)
    except Exception as exc:
        log.debug("elicitation complete not sent (%s)", type(exc).__name__)
