"""The mailbox resource, ``imap://{account_id}/mailbox/{mailbox}``: its URI, its template (one per process,
shared by every server) and its reading: the mailbox's counts by STATUS (nothing is selected or marked), as
the caller reaches the account; the subscriptions (:mod:`mail_imap_mcp.subscriptions`) resolve a URI here."""

from __future__ import annotations

import functools
import json
import weakref
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from mcp.server.mcpserver import Context as ReadContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resources.templates import ResourceSecurity, ResourceTemplate
from mcp.shared.exceptions import MCPError
from mcp.shared.uri_template import UriTemplate
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.mail.errors import MailError
from mail_imap_mcp.presentation.failures import failure_of
from mail_imap_mcp.sdk import add_template
from mail_imap_mcp.state import user_of

if TYPE_CHECKING:
    from mail_imap_mcp.imap.session import ImapSession

MAILBOX_URI = "imap://{account_id}/mailbox/{mailbox}"
_TEMPLATE = UriTemplate.parse(MAILBOX_URI)


def mailbox_uri(account_id: str, mailbox: str) -> str:
    """The resource URI of ``mailbox`` (percent-encoded: a ``/`` in a name becomes ``%2F``)."""
    return _TEMPLATE.expand({"account_id": account_id, "mailbox": mailbox})


def serve_mailboxes(server: MCPServer[Any], app: AppContext) -> None:
    """Add the mailbox resource template to ``server``, read as ``app``'s callers reach their accounts."""
    _OF_SERVER[server] = app
    add_template(server, _mailbox_template())


async def _read_mailbox(
    account_id: str,
    mailbox: str,
    request: ReadContext,  # bare: the SDK finds only an unparametrised Context
) -> str:
    app = _OF_SERVER[request.mcp_server].for_caller(user_of(request))
    account_id, name, counts = await examine(app, account_id, mailbox, counts=True)
    return json.dumps(
        {
            "account_id": account_id,
            "mailbox": name,
            "uri": mailbox_uri(account_id, name),
            **(counts or {}),
        }
    )


async def examine(
    app: AppContext, account_id: str, mailbox: str, *, counts: bool = False
) -> tuple[str, str, dict[str, int | None] | None]:
    """The account's id and the server's spelling of ``mailbox`` (and its counts) as ``app``'s caller
    reaches them; an MCP error naming the URI's part when the account is not configured or the
    mailbox does not exist."""
    resolved = app.resolve_account(account_id)
    if resolved not in app.config.accounts:
        known = ", ".join(sorted(app.config.accounts)) or "none"
        raise MCPError(
            INVALID_PARAMS,
            f"Account {account_id!r} is not configured (configured: {known}).",
            data={"parameter": "account_id", "account_id": account_id},
        )

    # With the connection stack a read runs on: a server's start only registers the resource.
    from mail_imap_mcp.imap.directory import matching_directory
    from mail_imap_mcp.imap.kept_open import mailbox_counts

    def look(session: ImapSession) -> tuple[str | None, dict[str, int | None] | None]:
        name = matching_directory(session, mailbox).selectable(mailbox)
        if name is None or not counts:
            return name, None
        found = mailbox_counts(session, name)
        return name, {
            "messages": found.messages,
            "unseen": found.unseen,
            "uidvalidity": found.uidvalidity,
            "uidnext": found.uidnext,
        }

    try:
        with app.holding():
            connection = app.connection(resolved)
            name, found = await anyio.to_thread.run_sync(connection.run, look)
    except (ToolFailure, MailError) as exc:  # a resource read's boundary: the registry's words
        failure = failure_of(exc)
        if failure is None:
            raise
        code = INVALID_PARAMS if failure.code is ErrorCode.INVALID_INPUT else INTERNAL_ERROR
        raise MCPError(code, f"{failure.code}: {failure.message}", data={"account_id": resolved}) from None
    if name is None:
        raise MCPError(
            INVALID_PARAMS,
            f"Mailbox {mailbox!r} does not exist in account {resolved!r} (or cannot be opened); "
            "call imap_list_mailboxes to see the mailboxes.",
            data={"parameter": "mailbox", "mailbox": mailbox, "account_id": resolved},
        )
    return resolved, name, found


async def resolve_uri(app: AppContext, uri: str) -> tuple[str, str]:
    """The account and the server's name of the mailbox resource ``uri``; an MCP error when it is none."""
    params = _TEMPLATE.match(uri)
    if params is None:
        raise MCPError(
            INVALID_PARAMS,
            f"Only mailbox resources can be subscribed to: {uri!r} is not of the form "
            "imap://<account_id>/mailbox/<mailbox>.",
            data={"uri": uri},
        )
    account_id, name, _ = await examine(app, str(params["account_id"]), str(params["mailbox"]))
    return account_id, name


#: Each server's application, for the mailbox template's one reader (servers come and go: the tests').
_OF_SERVER: weakref.WeakKeyDictionary[MCPServer[Any], AppContext] = weakref.WeakKeyDictionary()


@functools.cache
def _mailbox_template() -> ResourceTemplate:
    """The mailbox resource template, built once per process: its reader finds the server's subscriptions."""
    return ResourceTemplate.from_function(
        _read_mailbox,
        MAILBOX_URI,
        name="mailbox",
        title="Mailbox",
        description="A mailbox's counts (messages, unseen, uidvalidity, uidnext) as JSON, read with "
        "STATUS (nothing is marked). Subscribe to it to be told when any client changes the mailbox: "
        "a delivery, an expunge or a flag change brings notifications/resources/updated for this "
        "URI. A '/' in a mailbox name is written %2F.",
        mime_type="application/json",
        security=ResourceSecurity(exempt_params={"mailbox"}),
    )
