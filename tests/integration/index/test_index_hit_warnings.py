"""A search hit's sender warnings through a real MCP client: crafted mail (a display name that is another
address, a punycode domain with Cyrillic letters, a Reply-To on another domain and a Sender that is not
the From) carries them on the page whether the server answers (no index; every server of the matrix) or
the local index does (its summaries made from what it keeps, no FETCH; on Dovecot, each engine), alike
in both shapes; ordinary mail carries no field, and its page's untrusted_content line does not grow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.index.engines.postgresql import store as postgresql_store
from mail_imap_mcp.index.engines.sqlite import store as sqlite_store
from mail_imap_mcp.index.store import pack_texts
from mail_imap_mcp.services import index_read
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import account_client
from tests.support.clients.index_clients import SEARCH, indexed_client
from tests.support.mail.mailgen import plain_message
from tests.support.servers.matrix import MatrixServer
from tests.support.servers.postgres import IndexEngineParam
from tests.support.shared.index_search import other_client

pytestmark = pytest.mark.anyio

#: The phishing we measured in the first ten of a search, and two pieces of ordinary mail.
CRAFTED = '"landlord@lettings.example" <notice@evil.example>'
PUNYCODE = "Lettings <rent@xn--lttings-4fg.example>"  # Cyrillic е: lеttings.example
ORDINARY = "Landlord <landlord@lettings.example>"


def mail(number: int, from_: str, word: str = "", **headers: str) -> bytes:
    return plain_message(
        f"Your landlord's message about the heating is waiting {number}",
        f"log in here to read it: heatingword {word}\r\n",
        from_=from_,
        message_id=f"<heating{number}@warnings.test>",
        headers=headers,
    )


def warned(page: dict[str, Any]) -> dict[str, list[str]]:
    """Each hit's warning codes by its subject's number ([] where the field is absent)."""
    return {
        m["subject"].rsplit(" ", 1)[1]: [w["code"] for w in m.get("sender_warnings", [])]
        for m in page["messages"]
    }


EXPECTED = {
    "1": ["display_name_is_other_address"],
    "2": [],
    "3": ["punycode_domain", "mixed_script_domain"],
    "5": ["sender_differs_from_from", "reply_to_other_domain"],
}
#: Business-email compromise: the landlord's own From, replies and the sending elsewhere.
BEC = {"Reply-To": "Landlord <landlord.lettings@mail.example>", "Sender": "bulk@mailer.example"}


def crafted_mailbox(dovecot: MatrixServer) -> str:
    """A new user whose INBOX holds the crafted mail (1, 3, 5) and an ordinary message (2)."""
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [mail(1, CRAFTED), mail(2, ORDINARY, "calmword"), mail(5, ORDINARY, **BEC)])
    with other_client(dovecot, user) as other:
        other.append("INBOX", mail(3, PUNYCODE))
    return user


def summaries_counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one for each summary the index makes from what it keeps."""
    made: list[int] = []
    summary_of = index_read.summary_of

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(1)
        return summary_of(*args, **kwargs)

    monkeypatch.setattr(index_read, "summary_of", counted)
    return made


async def pages(mcp: EnvelopeClient, **more: Any) -> list[dict[str, Any]]:
    """The compact and the full page of the search for the crafted mail's word."""
    return [
        await mcp.ok(SEARCH, {"query": "heatingword", "mailbox": "INBOX", "fields": shape, **more})
        for shape in ("compact", "full")
    ]


async def test_crafted_mail_is_flagged_on_a_page_from_the_server_and_from_the_index(
    dovecot: MatrixServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index_engine: IndexEngineParam
) -> None:
    user = crafted_mailbox(dovecot)

    async for mcp in account_client(dovecot, user):
        by_server = await pages(mcp)
        calm = [await mcp.ok(SEARCH, {"query": "calmword", "mailbox": "INBOX"})]
    for page in by_server:
        assert warned(page) == EXPECTED
    compact, full = by_server
    (crafted,) = [m for m in compact["messages"] if m["subject"].endswith(" 1")]
    (warning,) = crafted["sender_warnings"]
    assert "landlord@lettings.example" in warning["message"] and "notice@evil.example" in warning["message"]
    assert compact["untrusted_content"].endswith(",sender_warnings")
    assert "messages[].sender_warnings" in full["untrusted_content"]["fields"]

    made = summaries_counted(monkeypatch)
    async for mcp, _app, _config in indexed_client(dovecot, user, tmp_path, index_engine):
        with other_client(dovecot, user) as other:  # one more, synced at query time
            other.append("INBOX", mail(4, CRAFTED))
        by_index = await pages(mcp, sort="relevance")
        assert len(made) == 2 * 5, "the index made these summaries from what it keeps"
        calm.append(await mcp.ok(SEARCH, {"query": "calmword", "mailbox": "INBOX", "sort": "relevance"}))
    for page in by_index:
        assert warned(page) == {**EXPECTED, "4": ["display_name_is_other_address"]}
    # The same warnings, in the same words, from the server and from the index.
    for from_server, from_index in zip(by_server, by_index, strict=True):
        words = {m["message_id"]: m.get("sender_warnings") for m in from_server["messages"]}
        assert all(
            words[m["message_id"]] == m.get("sender_warnings")
            for m in from_index["messages"]
            if m["message_id"] in words
        )
    # A page of ordinary mail, from either: no field, and the untrusted line as it always was.
    for page in calm:
        assert warned(page) == {"2": []}
        assert page["untrusted_content"] == "messages[].from,to,subject,snippet"
        assert "sender_warnings" not in json.dumps(page)


async def test_every_server_of_the_matrix_answers_a_page_with_the_warnings_of_its_headers(
    imap_server: MatrixServer,
) -> None:
    """The summary's FETCH asks each server for Reply-To and Sender beside the From: Cyrus and Courier
    give them as Dovecot does."""
    user = imap_server.new_user()
    imap_server.seed(
        user, "INBOX", [mail(1, CRAFTED), mail(2, ORDINARY, "calmword"), mail(5, ORDINARY, **BEC)]
    )
    with other_client(imap_server, user) as other:
        other.append("INBOX", mail(3, PUNYCODE))
    async for mcp in account_client(imap_server, user):
        for page in await pages(mcp):
            assert warned(page) == EXPECTED


async def test_a_row_indexed_before_reply_to_and_sender_were_kept_is_summarised_by_the_server(
    dovecot: MatrixServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index_engine: IndexEngineParam
) -> None:
    # An index written by a release that kept no Reply-To and Sender cannot tell a row without them from
    # one whose message has none: its page is read from the server, which gives every warning.
    user = crafted_mailbox(dovecot)

    def as_before(texts: Any, kept: Any = None) -> bytes:
        return pack_texts(texts)

    for engine_store in (sqlite_store, postgresql_store):
        monkeypatch.setattr(engine_store, "pack_texts", as_before)
    made = summaries_counted(monkeypatch)
    async for mcp, _app, _config in indexed_client(dovecot, user, tmp_path, index_engine):
        by_index = await pages(mcp, sort="relevance")
        assert made == [], "no summary of the index's old rows"
        calm = await mcp.ok(SEARCH, {"query": "calmword", "mailbox": "INBOX", "sort": "relevance"})
    for page in by_index:
        assert warned(page) == EXPECTED
    assert warned(calm) == {"2": []}
