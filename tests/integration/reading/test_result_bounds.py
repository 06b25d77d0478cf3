"""Every reading tool, called at its largest arguments, answers within what a client accepts.

Claude Code refuses a tool result over 25,000 tokens (MAX_MCP_OUTPUT_TOKENS); a result of at most
80,000 characters (about 20,000 tokens) stays within it. Each reading tool is called through a real MCP
client against Dovecot, with every size argument at the maximum its schema allows, on
mail large enough to fill it: the envelope's text block must stay within the bound, and where a window
is asked for, the schema's maximum is what comes back (the rest named by the answer's offset).
"""

from __future__ import annotations

import json
from email.message import EmailMessage
from typing import Any

import pytest

from mail_imap_mcp.envelope.schemas import flat_input_schema
from mail_imap_mcp.tools.registry import TOOLS
from tests.support.clients.envelope_client import EnvelopeClient, check_envelope
from tests.support.mail import mailgen
from tests.support.mail.mailgen import crlf
from tests.support.servers.dovecot import Dovecot

pytestmark = pytest.mark.anyio

#: The most characters one tool result may hold (docs/tools.md, "Result size").
RESULT_BOUND = 80_000
#: Every argument that sets how much a call returns (each is given its published maximum).
SIZE_ARGUMENTS = {
    "limit",
    "snippet_chars",
    "body_max_chars",
    "attachment_text_max_chars",
    "max_chars",
    "max_bytes",
}
THREAD = 110
FOLDERS = 700


def _prose(chars: int, label: str) -> str:
    """Lines of ordinary text, ``chars`` long, each numbered so that windows are told apart."""
    lines, total, n = [], 0, 0
    while total < chars:
        line = f'{label} line {n}: the "quarterly" figures, as agreed, follow below; see the notes.'
        lines.append(line)
        total += len(line) + 1
        n += 1
    return "\n".join(lines)[:chars]


def thread_message(i: int) -> bytes:
    refs = " ".join(f"<thread-{j}@bounds.example>" for j in range(i))
    headers = {"In-Reply-To": f"<thread-{i - 1}@bounds.example>", "References": refs} if i else {}
    return mailgen.plain_message(
        f"Re: the long-running planning discussion about the {i}th revision of the budget " + "x" * 160,
        _prose(3000, f"reply {i}"),
        from_=f"Participant Number {i} With A Long Display Name <participant{i}@bounds.example>",
        to=", ".join(f"Recipient {k} <recipient{k}@bounds.example>" for k in range(6)),
        message_id=f"<thread-{i}@bounds.example>",
        headers=headers,
    )


def large_message() -> bytes:
    """A long body, 200 long headers, three long text attachments, a binary one and one of quotes."""
    msg = EmailMessage()
    headers = {
        "From": "Reporter <reporter@bounds.example>",
        "To": "user@bounds.example",
        "Subject": "Everything at once",
        "Date": "Mon, 03 Feb 2025 10:00:00 +0100",
        "Message-ID": "<large@bounds.example>",
        **{f"X-Trace-{n}": f"hop {n} " + "t" * 120 for n in range(200)},
    }
    for name, value in headers.items():
        msg[name] = value
    msg.set_content(_prose(300_000, "body"))
    for name in ("notes.txt", "more-notes.txt", "appendix.txt"):
        msg.add_attachment(_prose(200_000, name), subtype="plain", filename=name)
    msg.add_attachment(
        bytes(range(256)) * 1000, maintype="application", subtype="octet-stream", filename="blob.bin"
    )
    # Quotes and backslashes: two characters each in JSON.
    msg.add_attachment('say "\\" ' * 30_000, subtype="plain", filename="quotes.txt")
    return crlf(msg)


def latin1_message() -> bytes:
    """A large 8-bit ISO-8859-1 message: its raw windows are not UTF-8."""
    head = (
        "From: Ren\xe9 <rene@bounds.example>\r\nTo: user@bounds.example\r\nSubject: Caf\xe9\r\n"
        "Date: Mon, 03 Feb 2025 11:00:00 +0100\r\nMessage-ID: <latin1@bounds.example>\r\n"
        "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=iso-8859-1\r\n"
        "Content-Transfer-Encoding: 8bit\r\n\r\n"
    )
    body = "\r\n".join(f"Caf\xe9 cr\xe8me br\xfbl\xe9e, ligne {n}." for n in range(6000))
    return (head + body + "\r\n").encode("latin-1")


async def _call_sized(
    mcp: EnvelopeClient, tool: str, arguments: dict[str, Any]
) -> tuple[dict[str, Any], int]:
    """The checked envelope and the length of the text block the client receives."""
    result = await mcp.client.call_tool(tool, arguments)
    envelope = check_envelope(result, (await mcp.schemas())[tool])
    assert envelope["success"], envelope
    (block,) = [item for item in result.content if item.type == "text"]
    return envelope, len(block.text)


def _largest(tool: str, **arguments: Any) -> dict[str, Any]:
    """``arguments`` with every size argument ``tool`` takes at the maximum its schema enforces (tools/list
    leaves bounds over 1,000 to the error that names them)."""
    (spec,) = [spec for spec in TOOLS if spec.name == tool]
    for name, prop in flat_input_schema(spec.input_model)["properties"].items():
        if name in SIZE_ARGUMENTS and name not in arguments:
            arguments[name] = prop["maximum"]
        elif name == "fields":
            arguments[name] = "full"
    return arguments


async def test_every_reading_tool_at_its_largest_arguments_stays_within_the_bound(
    dovecot: Dovecot, user: str, mcp: EnvelopeClient
) -> None:
    dovecot.ensure_folder(user, "Feed")
    for n in range(FOLDERS):
        dovecot.ensure_folder(user, f"Archive {n:03d} of the long-running projects of the department")
    first = await mcp.ok("imap_get_changes", {"mailbox": "Feed"})
    dovecot.seed(
        user, "INBOX", [thread_message(i) for i in range(THREAD)] + [large_message(), latin1_message()]
    )
    dovecot.seed(user, "Feed", [thread_message(i) for i in range(THREAD)])
    large, latin1, newest_reply = (
        f"imap:default:INBOX:{{}}:{uid}" for uid in (THREAD + 1, THREAD + 2, THREAD)
    )
    page = await mcp.ok("imap_search_messages", {"limit": 3, "fields": "full"})
    validity = page["messages"][0]["uidvalidity"]
    large, latin1, newest_reply = (mid.format(validity) for mid in (large, latin1, newest_reply))

    sizes: dict[str, int] = {}
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("list_accounts", "imap_list_accounts", {}),
        ("list_mailboxes", "imap_list_mailboxes", {"include_counts": True}),
        ("search", "imap_search_messages", {}),
        ("thread", "imap_get_thread", {"message_id": newest_reply}),
        ("changes", "imap_get_changes", {"mailbox": "Feed", "since": first["changes_token"]}),
        ("message", "imap_get_message", {"message_id": large, "include_all_headers": True}),
        (
            "message extract_text",
            "imap_get_message",
            {"message_id": large, "include_all_headers": True, "attachment_mode": "extract_text"},
        ),
        ("raw text", "imap_get_message_raw", {"message_id": large}),
        ("raw 8-bit", "imap_get_message_raw", {"message_id": latin1}),
        ("attachment text", "imap_get_attachment", {"message_id": large, "part_id": "2", "mode": "text"}),
        ("attachment quotes", "imap_get_attachment", {"message_id": large, "part_id": "6", "mode": "text"}),
        ("attachment bytes", "imap_get_attachment", {"message_id": large, "part_id": "5", "mode": "bytes"}),
    ]
    answers: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for label, tool, arguments in calls:
        arguments = _largest(tool, **arguments)
        envelope, sizes[label] = await _call_sized(mcp, tool, arguments)
        answers[label] = (arguments, envelope["data"])
    assert max(sizes.values()) <= RESULT_BOUND, json.dumps(sizes, indent=1)

    # The schema's maximum is what comes back, and the answer names where the rest starts.
    arguments, data = answers["raw text"]
    assert data["returned_bytes"] == arguments["max_bytes"] and data["truncated"]
    assert data["raw_text"] is not None and data["raw_base64"] is None
    arguments, data = answers["raw 8-bit"]
    assert data["returned_bytes"] == arguments["max_bytes"]
    assert data["raw_text"] is None and data["raw_base64"] is not None
    arguments, data = answers["attachment text"]
    assert data["returned_chars"] == arguments["max_chars"] and data["truncated"]
    assert data["next_action"]["arguments"]["offset"] == arguments["max_chars"]
    _, data = answers["attachment quotes"]
    assert data["truncated"] and data["next_action"]["arguments"]["offset"] == data["returned_chars"]
    arguments, data = answers["attachment bytes"]
    assert data["returned_bytes"] == arguments["max_bytes"]
    assert data["next_action"]["arguments"]["offset_bytes"] == arguments["max_bytes"]
    arguments, data = answers["message"]
    assert (
        arguments["body_max_chars"] - 40 <= len(data["message"]["body_text"]) <= arguments["body_max_chars"]
    )
    _, data = answers["message extract_text"]
    # Cut to fit (the body and the headers first), each said truncated: imap_get_attachment reads on.
    texts = [a for a in data["message"]["attachments"] if a.get("extracted_format")]
    assert len(texts) == 4 and all(a["extracted_text_truncated"] for a in texts)
    assert len(answers["search"][1]["messages"]) == answers["search"][0]["limit"]
    _, data = answers["list_mailboxes"]
    assert data["total"] == FOLDERS + 2 and 0 < data["returned"] == len(data["mailboxes"]) < data["total"]
