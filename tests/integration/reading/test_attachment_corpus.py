"""The document corpus (tests/support/mail/documents.py) read through the MCP client from real servers.

Every corpus item travels as an attachment of its own message: on Dovecot each is read with
imap_get_attachment (and the documents once more through imap_get_message attachment_mode=extract_text);
on Cyrus and Courier a representative subset (PDF, DOCX, calendar, an image, an attached message, a
bomb), which Dovecot's own tests read already. Each answer is a valid envelope with the expected text or the expected error,
the server answers the next call, and no flag changed.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from email.message import EmailMessage
from typing import Any

import PIL.Image
import pytest
from mcp_types import ImageContent

from mail_imap_mcp.config import ServerSettings
from mail_imap_mcp.services.attachment_text import SETTING_OF_LIMIT
from tests.support.clients.envelope_client import EnvelopeClient, uid_of
from tests.support.mail.documents import CORPUS, Document, documents, images
from tests.support.mail.mail_state import flags_of
from tests.support.mail.mailgen import crlf, inner_message
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.matrix import INBOX_ONLY, MatrixServer, inbox_only

pytestmark = pytest.mark.anyio

#: Read on every server of the matrix (Dovecot reads them all).
SUBSET = ("pdf_text", "docx_tables", "ics_invite", "jpeg_photo", "pdf_flate_bomb", "docx_zip_bomb")


def carrying(item: Document) -> bytes:
    msg = EmailMessage()
    msg["From"] = "Corpus <corpus@example.com>"
    msg["To"] = "user@example.org"
    msg["Subject"] = f"corpus {item.name}"
    msg["Date"] = "Mon, 03 Feb 2025 10:00:00 +0100"
    msg.set_content(f"Attached: {item.filename}\n")
    media_type, *parameters = (piece.strip() for piece in item.content_type.split(";"))
    maintype, subtype = media_type.split("/", 1)
    params = dict(p.split("=", 1) for p in parameters)
    msg.add_attachment(item.data, maintype=maintype, subtype=subtype, filename=item.filename, params=params)
    return crlf(msg)


def forwarded() -> bytes:
    msg = EmailMessage()
    msg["From"] = "Corpus <corpus@example.com>"
    msg["Subject"] = "corpus forwarded"
    msg.set_content("Forwarding.\n")
    msg.add_attachment(inner_message(), filename="forwarded.eml")
    return crlf(msg)


def check_text(item: Document, envelope: dict[str, Any]) -> None:
    """The envelope of ``item`` read as text is what the corpus says it must be."""
    context = f"{item.name}: {envelope['summary']}"
    if item.expect_error in (None, "extract_failed", "encrypted"):
        assert envelope["success"], context
        data = envelope["data"]
        if item.expect_error:
            assert data["status"] == "partial", context
            (issue,) = data["issues"]
            assert issue["code"] == item.expect_error and issue["stage"] == "extract_text", issue
            assert data["text"] is None and data["next_action"]["arguments"]["mode"] == "bytes"
            return
        text = data["text"]
        position = 0
        for fragment in item.expect_text:
            found = text.find(fragment, position)
            assert found >= 0, f"{item.name}: {fragment!r} missing (in order) from {text[:500]!r}"
            position = found + len(fragment)
        for absent in item.expect_absent:
            assert absent not in text, f"{item.name}: {absent!r} must not be in the text"
        if item.expect_format:
            assert data["format"] == item.expect_format, context
        if item.expect_pages is not None:
            assert data["pages"] == item.expect_pages, context
        if item.expect_note:
            assert any(item.expect_note in note for note in data["notes"]), data["notes"]
        assert "text" in data["untrusted_content"]["fields"]
        return
    assert not envelope["success"], context
    code = {"limit_exceeded": "limit_exceeded", "unsupported_format": "invalid_input"}[item.expect_error]
    assert envelope["error"]["code"] == code, envelope["error"]
    if item.expect_limit:
        assert envelope["error"]["details"]["limit"] == item.expect_limit, envelope["error"]


@pytest.fixture
def corpus_mailbox(
    mail_server: MatrixServer, user: str, request: pytest.FixtureRequest
) -> Iterator[dict[str, int]]:
    names: list[str] = request.param
    messages = [carrying(CORPUS[name]) for name in names] + [forwarded()]
    mail_server.seed(user, "INBOX", messages, flags=lambda i: ["", "\\Seen", "\\Flagged"][i % 3])
    before = flags_of(mail_server, user, "INBOX")
    yield {name: uid for uid, name in enumerate([*names, "forwarded"], start=1)}
    assert flags_of(mail_server, user, "INBOX") == before, "reading attachments changed flags"


async def ids_by_uid(mcp: EnvelopeClient) -> dict[int, str]:
    data = await mcp.ok("imap_search_messages", {"limit": 100, "snippet_chars": 0})
    return {uid_of(m): m["message_id"] for m in data["messages"]}


async def corpus_messages(mcp: EnvelopeClient, corpus_mailbox: dict[str, int]) -> list[tuple[Document, str]]:
    """Each corpus item of the mailbox with the id of the message carrying it."""
    ids = await ids_by_uid(mcp)
    return [(CORPUS[name], ids[uid]) for name, uid in corpus_mailbox.items() if name != "forwarded"]


@pytest.mark.slow
@pytest.mark.parametrize("corpus_mailbox", [[item.name for item in documents()]], indirect=True)
async def test_every_document_reads_as_text_on_dovecot(
    dovecot: Dovecot, corpus_mailbox: dict[str, int], mcp: EnvelopeClient
) -> None:
    for item, mid in await corpus_messages(mcp, corpus_mailbox):
        envelope = await mcp.call("imap_get_attachment", {"message_id": mid, "part_id": "2"})
        check_text(item, envelope)
        # The server is alive after each one: the next call works.
        assert (
            await mcp.ok(
                "imap_get_attachment",
                {"message_id": mid, "part_id": "2", "mode": "bytes", "max_bytes": 16},
            )
        )["returned_bytes"]
    await check_forwarded(await ids_by_uid(mcp), corpus_mailbox, mcp)


@pytest.mark.slow
@pytest.mark.parametrize("corpus_mailbox", [list(SUBSET)], indirect=True)
@inbox_only(("cyrus", "courier"))  # Dovecot: each of these in the tests of every document and image
async def test_representative_documents_on_the_other_servers(
    imap_server: MatrixServer, corpus_mailbox: dict[str, int], mcp: EnvelopeClient
) -> None:
    ids = await ids_by_uid(mcp)
    for name in SUBSET:
        item = CORPUS[name]
        arguments = {"message_id": ids[corpus_mailbox[name]], "part_id": "2"}
        envelope, blocks = await mcp.call_with_media("imap_get_attachment", arguments)
        if item.kind == "image":
            check_image(item, envelope, blocks)
        else:
            check_text(item, envelope)
    await check_forwarded(ids, corpus_mailbox, mcp)


async def check_forwarded(ids: dict[int, str], corpus_mailbox: dict[str, int], mcp: EnvelopeClient) -> None:
    """The attached message of the corpus mailbox reads as a message, its text included."""
    message = await mcp.ok(
        "imap_get_attachment", {"message_id": ids[corpus_mailbox["forwarded"]], "part_id": "2"}
    )
    assert message["format"] == "message" and "The budget is 42 000 EUR." in message["text"]


def several(names: list[str]) -> bytes:
    msg = EmailMessage()
    msg["From"] = "Corpus <corpus@example.com>"
    msg["Subject"] = "corpus several"
    msg.set_content("Several documents.\n")
    for name in names:
        item = CORPUS[name]
        maintype, subtype = item.content_type.split(";")[0].split("/")
        msg.add_attachment(item.data, maintype=maintype, subtype=subtype, filename=item.filename)
    msg.add_attachment("<p>Seen</p><p hidden>unseen</p>", subtype="html", filename="page.html")
    msg.add_attachment(inner_message(), filename="forwarded.eml")
    return crlf(msg)


EXTRACTED = ["pdf_text", "docx_tables", "pdf_encrypted", "pdf_flate_bomb", "pdf_multipage", "png_rgba"]


@INBOX_ONLY
async def test_get_message_extract_text_gives_each_document_its_text_and_failures_as_issues(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    imap_server.seed(user, "INBOX", [several(EXTRACTED)])
    (mid,) = (await ids_by_uid(mcp)).values()
    envelope = await mcp.call(
        "imap_get_message",
        {
            "message_id": mid,
            "attachment_mode": "extract_text",
            "attachment_text_max_chars": 120,
            "fields": "full",
        },
    )
    assert envelope["success"], envelope
    data = envelope["data"]
    attachments = {a["filename"]: a for a in data["message"]["attachments"]}
    assert "Contract total: 4,250.00 EUR" in attachments["contract.pdf"]["extracted_text"]
    assert attachments["contract.pdf"]["extracted_format"] == "pdf"
    assert "Quarterly report" in attachments[CORPUS["docx_tables"].filename]["extracted_text"]
    multipage = attachments[CORPUS["pdf_multipage"].filename]
    assert multipage["extracted_text_truncated"] is True and len(multipage["extracted_text"]) <= 120
    assert attachments["page.html"]["extracted_text"] == "Seen"
    assert "Subject: Forwarded: budget" in attachments["forwarded.eml"]["extracted_text"]
    image = attachments[CORPUS["png_rgba"].filename]
    assert image["extracted_text"] is None and image["extracted_format"] is None
    assert data["status"] == "partial"
    by_part = {issue["message"].split(" ")[1]: issue for issue in data["issues"]}
    codes = sorted(issue["code"] for issue in data["issues"])
    assert codes == ["encrypted", "limit_exceeded"], data["issues"]
    assert all(issue["stage"] == "extract_text" and issue["message_id"] == mid for issue in by_part.values())
    assert "message.attachments[].extracted_text" in data["untrusted_content"]["fields"]
    # Metadata (the default) extracts nothing; none lists nothing.
    plain = (await mcp.ok("imap_get_message", {"message_id": mid}))["message"]
    assert all("extracted_text" not in a for a in plain["attachments"])  # compact: absent, not null
    bare = await mcp.ok("imap_get_message", {"message_id": mid, "attachment_mode": "none", "fields": "full"})
    assert bare["message"]["attachments"] == [] and bare["message"]["has_attachments"] is True
    compact = await mcp.ok("imap_get_message", {"message_id": mid, "attachment_mode": "extract_text"})
    (pdf,) = [a for a in compact["message"]["attachments"] if a.get("filename") == "contract.pdf"]
    assert pdf["extracted_format"] == "pdf" and "resource_uri" not in pdf and compact["status"] == "partial"


def check_image(item: Document, envelope: dict[str, Any], blocks: list[ImageContent]) -> None:
    """``item`` read as an image: an image block after the envelope within the limits, or the error."""
    context = f"{item.name}: {envelope['summary']}"
    if item.expect_error is None:
        assert envelope["success"], context
        data = envelope["data"]
        (block,) = blocks
        image = data["image"]
        assert (
            data["mode"] == "image" and block.mime_type == image["mime_type"] == f"image/{item.expect_format}"
        )
        payload = base64.b64decode(block.data)
        assert len(payload) == image["size_bytes"] <= ServerSettings().max_image_output_bytes
        with PIL.Image.open(io.BytesIO(payload)) as decoded:
            assert decoded.size == (image["width"], image["height"])
        assert max(image["width"], image["height"]) <= ServerSettings().image_max_dimension
        assert image["downscaled"] is item.expect_downscaled, context
        return
    assert not envelope["success"] and not blocks, context
    code = {"limit_exceeded": "limit_exceeded", "unsupported_format": "invalid_input"}[item.expect_error]
    assert envelope["error"]["code"] == code, envelope["error"]
    if item.expect_limit:
        assert envelope["error"]["details"]["limit"] == item.expect_limit
        setting = SETTING_OF_LIMIT.get(item.expect_limit)
        assert envelope["error"]["details"]["setting"] == setting
        assert setting is None or setting in envelope["error"]["message"]


@pytest.mark.slow
@pytest.mark.parametrize("corpus_mailbox", [[item.name for item in images()]], indirect=True)
async def test_every_image_comes_back_as_an_image_block_on_dovecot(
    dovecot: Dovecot, corpus_mailbox: dict[str, int], mcp: EnvelopeClient
) -> None:
    messages = await corpus_messages(mcp, corpus_mailbox)
    for item, mid in messages:
        # No mode: image types default to mode=image.
        envelope, blocks = await mcp.call_with_media(
            "imap_get_attachment", {"message_id": mid, "part_id": "2"}
        )
        check_image(item, envelope, blocks)
    # An image read as text is refused naming mode, with the way to its bytes.
    png = next(mid for item, mid in messages if item.name == "png_rgba")
    refused = await mcp.fail(
        "imap_get_attachment",
        {"message_id": png, "part_id": "2", "mode": "text"},
        "invalid_input",
    )
    assert refused["error"]["details"]["parameter"] == "mode"
    assert refused["data"]["next_action"]["arguments"]["mode"] == "bytes"
