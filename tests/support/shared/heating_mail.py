"""Issue 80's "done when" question, asked end to end: "the heating in the flat" on a mailbox where the
landlord's two messages about it share no content word with it ("heating" and "flat" are in no message;
their words are radiators, boiler, apartment), among other mail. Seeded oldest first, so that neither the
newest-first order nor a search by words puts them first: only a ranking by meaning does.

Issue 90's "done when" asks the same of a real mailbox's size and language: :func:`seed_landlords_mailbox`
seeds the meaning set's German mailbox (the German landlord's heating mail and the set's other German
topics among 10,000 everyday messages), asked in German and in English (:data:`LANDLORD_ASKED`)."""

from __future__ import annotations

from typing import Any

from mail_imap_mcp.meaning.fusion import about_words
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.mail.mailgen import plain_message
from tests.support.mail.meaning_set import RECIPIENT
from tests.support.mail.meaning_set.languages import mailboxes, topics
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
    ("Order 7731 shipped", "Your new running shoes left our warehouse this morning; track them with the "
     "code below.", "Sportshop <orders@sportshop.example>"),
    ("Choir rehearsal moved", "We rehearse on Wednesday this week, half an hour earlier; bring the new scores.",
     "Clara <clara@choir.example>"),
    ("Slides for the board", "Here are the slides for Thursday's board meeting; the budget chart is on "
     "page four.", "Omar <omar@work.example>"),
    ("Library books due", "Two books on your card are due back on the 14th; you may renew them online.",
     "City library <loans@library.example>"),
    ("Vet reminder", "Pepper's yearly vaccination is due next month; call us to book a time.",
     "Vet practice <desk@vets.example>"),
    ("Football on Sunday", "Kick-off is at ten, bring the blue shirts and some water.",
     "Coach Dan <dan@club.example>"),
    ("Your tax return", "We received your documents; the return will be filed before the end of May.",
     "Tax advisers <office@tax.example>"),
    ("Photo album", "The pictures from the wedding are online now, the password is the date.",
     "Lena <lena@family.example>"),
    ("Job application", "Thank you for applying as a data analyst; we will answer within two weeks.",
     "Recruiting <jobs@company.example>"),
    ("Newsletter: spring recipes", "Asparagus soup, strawberry tart and a lemon risotto for the weekend.",
     "Kitchen stories <news@kitchen.example>"),
]  # fmt: skip


def seed_heating_mail(server: Dovecot, user: str) -> None:
    """:data:`MAIL` into ``user``'s INBOX, the landlord's first (the oldest)."""
    words = about_words(ABOUT)
    assert words and not any(w in f"{s} {b}".casefold() for s, b, _ in MAIL for w in words)
    server.seed(user, "INBOX", [plain_message(subject, body, from_=sender) for subject, body, sender in MAIL])


async def asked_about_the_heating(
    mcp: EnvelopeClient, *, within: float = 180, **arguments: Any
) -> dict[str, Any]:
    """The answer to :data:`ABOUT` (``arguments`` added, an ``about`` of theirs asked instead) once every
    message has its vectors (the pass behind the words gives them in the background; until then the
    answer says ``meaning_partial``), waiting ``within`` seconds on an idle machine."""

    async def complete() -> dict[str, Any] | None:
        envelope = await mcp.call(SEARCH, {"about": ABOUT, **arguments})
        assert envelope["success"], envelope
        codes = {issue["code"] for issue in envelope["data"].get("issues") or ()}
        return None if "meaning_partial" in codes else envelope

    return await eventually_async(complete, within=within, what="every message has its vectors")


#: The German landlord's heating topic of the meaning set (``languages.json``), asked in German and in
#: English (neither question shares a content word with its messages).
(_HEATING,) = [topic for topic in topics() if topic["key"] == "heating"]
LANDLORD_ASKED = (_HEATING["queries"]["de"], _HEATING["queries"]["en"])
#: The subjects of the German landlord's messages about the heating.
LANDLORDS_HEATING = frozenset(message["subject"] for message in _HEATING["messages"]["de"])


def seed_landlords_mailbox(server: Dovecot, user: str, distractors: int = 10_000) -> int:
    """The meaning set's German mailbox into ``user``'s INBOX, oldest first (the landlord's heating mail
    among the oldest): every German topic's mail spread among ``distractors`` everyday messages of the
    set's builders (:func:`~tests.support.mail.meaning_set.languages.mailboxes`); the messages seeded."""
    (german,) = [mailbox for mailbox in mailboxes(distractors) if mailbox.name == "German"]
    messages = german.labelled.messages
    server.seed(
        user,
        "INBOX",
        (plain_message(m.subject, m.body, from_=m.sender, to=RECIPIENT, date=m.sent) for m in messages),
    )
    return len(messages)


def assert_the_landlords_messages_first(envelope: dict[str, Any]) -> None:
    """The landlord's two messages first, each there by meaning, and the page ranked."""
    data = envelope["data"]
    found = [(message["subject"], message["why"]) for message in data["messages"]]
    assert envelope["summary"].endswith("best match first") and data["status"] == "ok", envelope
    assert {subject for subject, _ in found[:2]} == set(LANDLORDS), found
    assert [why for _, why in found[:2]] == ["meaning", "meaning"], found
