"""Issue 80's "done when" question, asked end to end: "the heating in the flat" on a mailbox where the
landlord's two messages about it share no content word with it ("heating" and "flat" are in no message;
their words are radiators, boiler, apartment), among other mail. Seeded oldest first, so that neither the
newest-first order nor a search by words puts them first: only a ranking by meaning does."""

from __future__ import annotations

from typing import Any

from mail_imap_mcp.meaning.fusion import about_words
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.mail.mailgen import plain_message
from tests.support.patience import eventually_async
from tests.support.servers.dovecot import Dovecot

SEARCH = "imap_search_messages"
ABOUT = "the heating in the flat"
LANDLORD = "Brandt Property Management <office@brandt-property.example>"
LANDLORDS = ("Radiator still cold", "Boiler engineer visit")
MAIL = [
    (LANDLORDS[0], "The radiators in your apartment are still cold, I know. The plumber comes back on Monday "
     "to check the thermostat and the hot water.", LANDLORD),
    (LANDLORDS[1], "The boiler engineer visits on Tuesday morning to repair the hot water and the radiators "
     "of the apartment; please leave the key with the caretaker.", LANDLORD),
    ("Invoice 4411 - homepage overhaul", "Amount due for the new landing pages: 2,400 EUR within 30 days.",
     "Studio Pixel <billing@pixel.example>"),
    ("Concert tickets", "Your two tickets for Saturday are attached; doors open at 19:00.",
     "Box office <tickets@hall.example>"),
    ("Team lunch", "Shall we meet at the Italian place at noon on Friday?", "Ann <ann@work.example>"),
    ("Quarterly numbers", "Revenue grew by four percent; the spreadsheet is attached to the wiki page.",
     "Finance <finance@work.example>"),
    ("Garden party", "Bring a salad or a dessert, we start at five in the afternoon.",
     "Neighbours <party@street.example>"),
    ("Password reset", "Someone asked to reset the password of your account; ignore this if it was you.",
     "Accounts <no-reply@service.example>"),
    ("Book club", "This month we read a novel about a lighthouse keeper; we meet on Thursday.",
     "Mia <mia@books.example>"),
    ("Dentist appointment", "Your check-up is on 3 March at 9:30. Please arrive ten minutes early.",
     "Dental practice <desk@teeth.example>"),
    ("Parcel on its way", "The courier delivers between 9 and 12 tomorrow.", "Shop <orders@shop.example>"),
    ("Release notes 2.3", "The new version fixes the login bug and makes the export faster.",
     "Dev team <dev@work.example>"),
]  # fmt: skip


def seed_heating_mail(server: Dovecot, user: str) -> None:
    """:data:`MAIL` into ``user``'s INBOX, the landlord's first (the oldest)."""
    words = about_words(ABOUT)
    assert words and not any(w in f"{s} {b}".casefold() for s, b, _ in MAIL for w in words)
    server.seed(user, "INBOX", [plain_message(subject, body, from_=sender) for subject, body, sender in MAIL])


async def asked_about_the_heating(mcp: EnvelopeClient, **arguments: Any) -> dict[str, Any]:
    """The answer to :data:`ABOUT` (``arguments`` added) once every message has its vectors (the pass
    behind the words gives them in the background; until then the answer says ``meaning_partial``)."""

    async def complete() -> dict[str, Any] | None:
        envelope = await mcp.call(SEARCH, {"about": ABOUT, **arguments})
        assert envelope["success"], envelope
        codes = {issue["code"] for issue in envelope["data"].get("issues") or ()}
        return None if "meaning_partial" in codes else envelope

    return await eventually_async(complete, within=180, what="every message has its vectors")


def assert_the_landlords_messages_first(envelope: dict[str, Any]) -> None:
    """The landlord's two messages first, each there by meaning, and the page ranked."""
    data = envelope["data"]
    found = [(message["subject"], message["why"]) for message in data["messages"]]
    assert envelope["summary"].endswith("best match first") and data["status"] == "ok", envelope
    assert {subject for subject, _ in found[:2]} == set(LANDLORDS), found
    assert [why for _, why in found[:2]] == ["meaning", "meaning"], found
