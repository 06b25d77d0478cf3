"""The short way of reading response lines (:mod:`mail_imap_mcp.imap.wire`) stores what imaplib stores.

Each script is answered twice on a scripted server: with imaplib's protocol log on (``debug`` 5, so
every line goes through imaplib's own reader) and off (the short way for numbered untagged lines);
the untagged responses and the tagged status must be the same, literals and odd lines included.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mail_imap_mcp.imap import wire
from mail_imap_mcp.imap.errors import ConnectProgress
from mail_imap_mcp.net.budget import CallBudget
from tests.support.fake_imap import ScriptedServer, answer

ANSWERS = {
    "fetch lines": [
        b'* 1 FETCH (UID 7 INTERNALDATE "01-Jan-2025 10:00:00 +0000")',
        b"* 2 FETCH (UID 9 FLAGS (\\Seen))",
        b"{tag} OK Fetch completed",
    ],
    "literal and its trailer": [
        b"* 3 FETCH (UID 11 BODY[HEADER] {12}",
        b"Subject: x\r\n)",
        b"* 4 FETCH (UID 12 BODY[HEADER] {0}",
        b")",
        b"{tag} OK Fetch completed",
    ],
    "examine-like mix": [
        b"* FLAGS (\\Seen)",
        b"* OK [PERMANENTFLAGS ()] Read-only",
        b"* 30 EXISTS",
        b"* 0 RECENT",
        b"* 5 EXPUNGE",
        b"* OK [UIDVALIDITY 42] UIDs valid",
        b"* 7 OK odd numbered status",
        b"* SEARCH 1 2 3",
        b"{tag} OK done",
    ],
}


def _client(server: ScriptedServer) -> wire.BudgetedIMAPClient:
    return wire.BudgetedIMAPClient(
        "127.0.0.1",
        1143,
        tls=False,
        ssl_context=None,  # type: ignore[arg-type]  # plain: never used
        budget=CallBudget(10),
        progress=ConnectProgress(),
        open_socket=server.open_socket,
    )


def _read(lines: list[bytes], *, protocol_log: bool) -> tuple[str, list[Any], dict[str, list[Any]]]:
    server = ScriptedServer()
    client = _client(server)
    client._imap.debug = 5 if protocol_log else 0
    client._imap.untagged_responses.clear()
    server.expect(answer("NOOP", *lines))
    tag = client.send("NOOP")
    typ, data = client.complete("NOOP", tag)
    return typ, data, dict(client.untagged)


@pytest.mark.parametrize("name", list(ANSWERS))
def test_short_way_stores_what_imaplib_stores(name: str) -> None:
    assert _read(ANSWERS[name], protocol_log=False) == _read(ANSWERS[name], protocol_log=True)


def test_protocol_log_is_off_when_no_one_listens() -> None:
    assert _client(ScriptedServer())._imap.debug == 0


def test_protocol_log_stays_on_when_its_logger_listens(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="imapclient.imaplib")
    assert _client(ScriptedServer())._imap.debug == 5
