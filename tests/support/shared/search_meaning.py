"""What the tests of search by meaning through MCP share (test_search_meaning.py and
test_search_meaning_filters.py): a landlord's heating mail among other mail, seeded on one server, and the
wait for every message's vectors."""

from __future__ import annotations

from typing import Any

from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.index_clients import SEARCH
from tests.support.mail.mailgen import plain_message
from tests.support.patience import eventually_async
from tests.support.servers.matrix import MatrixServer

LANDLORD = "Mr Brandt <brandt@hausverwaltung.example>"
MAIL = [
    ("Radiators", "The radiators in your apartment will stay cold until Thursday: the engineer is "
     "repairing the boiler.", LANDLORD),
    ("Central heating", "The central heating of the building is broken; sorry for the cold rooms, the "
     "plumber comes tomorrow.", LANDLORD),
    ("Rent from April", "From April the monthly rent for your apartment rises by 40 EUR, as the lease "
     "allows.", LANDLORD),
    ("Invoice 4411 - homepage overhaul", "Amount due for the new landing pages: 2,400 EUR within 30 "
     "days.", "Studio Pixel <billing@pixel.example>"),
    ("Your trip to Lisbon", "Your flight TP 1234 leaves at 07:10; the hotel is booked for three nights.",
     "Travel Desk <trips@travel.example>"),
    ("Team lunch", "Shall we meet at the Italian place at noon on Friday?", "Ann <ann@work.example>"),
    ("Quarterly numbers", "Revenue grew by four percent; the spreadsheet is attached to the wiki page.",
     "Finance <finance@work.example>"),
    ("Garden party", "Bring a salad or a dessert, we start at five in the afternoon.",
     "Neighbours <party@street.example>"),
    ("Password reset", "Someone asked to reset the password of your account; ignore this if it was you.",
     "Accounts <no-reply@service.example>"),
]  # fmt: skip
#: Its words are in "Central heating" (broken, rooms), none in "Radiators" (radiators is another word):
#: that one is found by its meaning.
ABOUT = "the radiator is broken and the rooms are freezing"


def seed(server: MatrixServer, user: str) -> None:
    server.seed(
        user,
        "INBOX",
        [
            plain_message(subject, body, from_=sender, message_id=f"<m{number}@meaning.test>")
            for number, (subject, body, sender) in enumerate(MAIL)
        ],
    )


async def every_message_has_vectors(mcp: EnvelopeClient) -> None:
    """Wait until a search by meaning no longer says some messages have no vectors yet."""

    async def complete() -> bool | None:
        envelope = await mcp.call(SEARCH, {"about": "anything"})
        assert envelope["success"], envelope
        codes = {issue["code"] for issue in envelope["data"].get("issues") or ()}
        return True if "meaning_partial" not in codes else None

    await eventually_async(complete, within=120, what="every message has its vectors")


def subjects(data: dict[str, Any]) -> list[str]:
    return [message["subject"] for message in data["messages"]]
