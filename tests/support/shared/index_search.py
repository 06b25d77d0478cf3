"""What tests/integration/index/test_index_search.py shares with other test modules."""

from __future__ import annotations

import imapclient

from tests.support.mail.mailgen import plain_message
from tests.support.servers.matrix import MatrixServer

SEARCH = "imap_search_messages"


def message(number: int, word: str, extra: str = "") -> bytes:
    return plain_message(
        f"note {number} {word if number % 2 else ''}",
        f"the text of note {number} says {word} {extra}\r\n",
        message_id=f"<note{number}@search.test>",
    )


def other_client(server: MatrixServer, user: str) -> imapclient.IMAPClient:
    return server.connect(user, tls=False, starttls=False)
