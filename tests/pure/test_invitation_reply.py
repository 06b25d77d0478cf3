"""The answer to an invitation (content/invitations.py) and the iCalendar text it is written in
(content/icalendar_text.py), each reply read back with the real icalendar package: for invitations in the
shapes Google Calendar, Exchange/Outlook and Apple Calendar send (tests/support/mail/invitations.py), exactly
the fields RFC 5546 3.2.3 asks of a REPLY; and each refusal."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from icalendar import Calendar

from mail_imap_mcp.content.icalendar_text import FOLD_OCTETS, Line, escape_text, fold, parse, write_line
from mail_imap_mcp.content.invitations import (
    EventKey,
    InvitationProblem,
    InvitationRefused,
    answer_invitation,
    reply_words,
    supersedes,
)
from tests.support.mail.invitations import apple, google, outlook

NOW = datetime(2025, 11, 21, 8, 30, tzinfo=UTC)
ALICE, BOB, CAROL, DAVE = "alice@example.com", "bob@example.com", "carol@example.com", "dave@example.com"


def _read(text: str) -> Calendar:
    (calendar,) = Calendar.from_ical(text, multiple=True)
    return calendar


def _events(calendar: Calendar) -> list:  # type: ignore[type-arg]
    return [c for c in calendar.walk() if c.name == "VEVENT"]


def _request_event(text: str, recurrence: bool = False):  # type: ignore[no-untyped-def]
    return next(e for e in _events(_read(text)) if (e.get("RECURRENCE-ID") is not None) == recurrence)


@pytest.mark.parametrize("answer", ["accept", "tentative", "decline"])
def test_a_google_series_is_answered_for_the_series_with_the_request_fields(answer: str) -> None:
    request = google(BOB, [ALICE, CAROL])
    reply = answer_invitation(request, ["other@example.com", ALICE], answer, "", NOW)  # type: ignore[arg-type]
    calendar = _read(reply.calendar)
    assert str(calendar["METHOD"]) == "REPLY" and str(calendar["VERSION"]) == "2.0" and calendar.get("PRODID")
    (event,) = _events(calendar)
    original = _request_event(request)
    assert str(event["UID"]) == str(original["UID"])
    assert int(event["SEQUENCE"]) == int(original["SEQUENCE"]) == 0
    assert event.get("RECURRENCE-ID") is None
    assert event["DTSTAMP"].dt == NOW
    assert str(event["ORGANIZER"]) == f"mailto:{BOB}" and event["ORGANIZER"].params["CN"] == "Bob Organizer"
    attendee = event["ATTENDEE"]  # exactly one: the account's own
    assert not isinstance(attendee, list) and str(attendee) == f"mailto:{ALICE}"
    partstat = {"accept": "ACCEPTED", "tentative": "TENTATIVE", "decline": "DECLINED"}[answer]
    assert attendee.params["PARTSTAT"] == partstat and "RSVP" not in attendee.params
    assert attendee.params["CN"] == ALICE and attendee.params["ROLE"] == "REQ-PARTICIPANT"
    assert event["DTSTART"].dt == original["DTSTART"].dt and event["DTEND"].dt == original["DTEND"].dt
    assert [str(z["TZID"]) for z in calendar.walk("VTIMEZONE")] == ["Europe/Berlin"]
    assert event.get("COMMENT") is None and event.get("VALARM") is None and event.get("DESCRIPTION") is None
    verb = {"accept": "Accept", "tentative": "Tentatively accept", "decline": "Decline"}[answer]
    assert (
        reply.words
        == f"{verb} 'Quarterly review', Tue 2 Dec 2025 10:00-11:00 Europe/Berlin (every occurrence), as {ALICE}"
    )
    assert reply.subject.endswith(": Quarterly review") and (reply.organizer, reply.attendee) == (BOB, ALICE)
    assert reply_words(reply.calendar) == [reply.words]


def test_an_outlook_occurrence_keeps_its_recurrence_id_and_sequence_and_its_windows_zone() -> None:
    request = outlook(BOB, [CAROL, ALICE], sequence=2)
    reply = answer_invitation(request, [ALICE], "accept", "Fine; see you, then.\nA.", NOW)
    (event,) = _events(_read(reply.calendar))
    original = _request_event(request, recurrence=True)
    assert str(event["UID"]) == str(original["UID"]) and int(event["SEQUENCE"]) == 2
    assert event["RECURRENCE-ID"].dt == original["RECURRENCE-ID"].dt
    assert event["RECURRENCE-ID"].params["TZID"] == "W. Europe Standard Time"
    assert (
        str(event["ATTENDEE"]).lower() == f"mailto:{ALICE}"
        and event["ATTENDEE"].params["PARTSTAT"] == "ACCEPTED"
    )
    assert str(event["COMMENT"]) == "Fine; see you, then.\nA."  # escaped when written, read back whole
    assert [str(z["TZID"]) for z in _read(reply.calendar).walk("VTIMEZONE")] == ["W. Europe Standard Time"]
    assert (
        reply.words
        == f"Accept 'Quarterly review', Tue 9 Dec 2025 11:00-12:00 W. Europe Standard Time, as {ALICE}"
    )


def test_an_apple_delegate_answers_with_its_delegation_kept() -> None:
    request = apple(BOB, CAROL, ALICE, [DAVE])
    reply = answer_invitation(request, [ALICE], "decline", "", NOW)
    (event,) = _events(_read(reply.calendar))
    attendee = event["ATTENDEE"]
    assert str(attendee) == f"mailto:{ALICE}" and attendee.params["PARTSTAT"] == "DECLINED"
    assert attendee.params["DELEGATED-FROM"] == f"mailto:{CAROL}" and attendee.params["CN"] == "Delegate"
    assert int(event["SEQUENCE"]) == 1 and event["ORGANIZER"].params["EMAIL"] == BOB
    assert reply.words == f"Decline 'Quarterly review', Wed 3 Dec 2025 14:00-15:30 Europe/Berlin, as {ALICE}"
    # The delegator answers too, its delegation kept as it is (RFC 5546 4.2.5).
    delegator = answer_invitation(request, [CAROL], "accept", "", NOW)
    (event,) = _events(_read(delegator.calendar))
    assert event["ATTENDEE"].params["DELEGATED-TO"] == f"mailto:{ALICE}"


@pytest.mark.parametrize(
    ("request_text", "problem"),
    [
        (google(BOB, [CAROL]), InvitationProblem.NOT_AN_ATTENDEE),
        (google(BOB, [ALICE], method="CANCEL"), InvitationProblem.NOT_A_REQUEST),
        (google(BOB, [ALICE], method="PUBLISH"), InvitationProblem.NOT_A_REQUEST),
        ("BEGIN:VCALENDAR\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\nUID:x\r\n", InvitationProblem.MALFORMED),
        ("not a calendar", InvitationProblem.MALFORMED),
    ],
)
def test_what_cannot_be_answered_is_refused_saying_why(request_text: str, problem: InvitationProblem) -> None:
    with pytest.raises(InvitationRefused) as refused:
        answer_invitation(request_text, [ALICE], "accept", "", NOW)
    assert refused.value.problem is problem
    if problem is InvitationProblem.NOT_AN_ATTENDEE:
        assert refused.value.attendees == [CAROL]


def test_a_later_sequence_or_a_cancel_of_the_same_uid_supersedes_and_another_uid_does_not() -> None:
    key = EventKey("7kukuqrfedlm2f9t0vr42q2qc8@google.com", 0, None)
    assert supersedes(google(BOB, [ALICE], sequence=1), [key], BOB, [BOB]) is InvitationProblem.SUPERSEDED
    assert supersedes(google(BOB, [ALICE], sequence=0), [key], BOB, [BOB]) is None
    assert supersedes(google(BOB, [ALICE], method="CANCEL"), [key], BOB, [BOB]) is InvitationProblem.CANCELLED
    assert supersedes(google(BOB, [ALICE], sequence=5, uid="other@google.com"), [key], BOB, [BOB]) is None
    occurrence = EventKey(
        "040000008200E00074C5B7101A82E00800000000D0E2A1B0F65ADC01000000000000000010000000",
        2,
        "20251209T100000",
    )
    assert (
        supersedes(outlook(BOB, [ALICE], sequence=3), [occurrence], BOB, [BOB])
        is InvitationProblem.SUPERSEDED
    )
    assert (
        supersedes(outlook(BOB, [ALICE], sequence=2, method="CANCEL"), [occurrence], BOB.upper(), [BOB])
        is InvitationProblem.CANCELLED
    )


def test_regression_only_the_organizers_cancel_or_update_counts() -> None:
    """Anyone could mail a CANCEL with the invitation's UID and make it unanswerable (issue 78 S8-4)."""
    key = EventKey("7kukuqrfedlm2f9t0vr42q2qc8@google.com", 0, None)
    assert supersedes(google(CAROL, [ALICE], method="CANCEL"), [key], BOB, [BOB]) is None
    assert supersedes(google(CAROL, [ALICE], sequence=3), [key], BOB, [BOB]) is None


def test_regression_a_cancel_copying_the_organizer_counts_only_from_the_organizer() -> None:
    """Anyone could mail a CANCEL that copies the invitation's ORGANIZER and make it unanswerable (issue 89
    item 5, S8-4 partly): the message's From or Sender must be the organizer."""
    key = EventKey("7kukuqrfedlm2f9t0vr42q2qc8@google.com", 0, None)
    cancel, update = google(BOB, [ALICE], method="CANCEL"), google(BOB, [ALICE], sequence=3)
    for authors in ([CAROL], [], [CAROL, ALICE]):
        assert supersedes(cancel, [key], BOB, authors) is None
        assert supersedes(update, [key], BOB, authors) is None
    assert supersedes(cancel, [key], BOB, [CAROL, BOB.upper()]) is InvitationProblem.CANCELLED  # its Sender
    assert supersedes(update, [key], BOB.upper(), [BOB]) is InvitationProblem.SUPERSEDED


@pytest.mark.parametrize(
    ("organizer_line", "words"),
    [
        (f"ORGANIZER:mailto:{BOB},{CAROL}", "not one email address"),
        (f"ORGANIZER:mailto:{BOB}?bcc={CAROL}", "not one email address"),
        (f"ORGANIZER:mailto:Bob <{BOB}>", "not one email address"),
        (f"ORGANIZER;CN=Bob\\nBcc {CAROL}:mailto:{BOB}", "name holds a control character"),
    ],
)
def test_regression_an_organizer_that_is_not_one_address_or_whose_name_breaks_a_line_is_refused(
    organizer_line: str, words: str
) -> None:
    """These reached the draft's To header and ended in ``internal`` (issue 78 S8-3)."""
    request = google(BOB, [ALICE]).replace(f"ORGANIZER;CN=Bob Organizer:mailto:{BOB}", organizer_line)
    assert organizer_line in request
    with pytest.raises(InvitationRefused, match=words) as refused:
        answer_invitation(request, [ALICE], "accept", "", NOW)
    assert refused.value.problem is InvitationProblem.MALFORMED


def test_lines_fold_at_75_octets_without_splitting_a_character_and_text_is_escaped() -> None:
    long = Line("SUMMARY", (), escape_text("Überprüfung; Räume, \\ Plan\n" * 6))
    folded = write_line(long)
    assert all(len(line.encode()) <= FOLD_OCTETS for line in folded.split("\r\n"))
    assert folded.endswith("\r\n") and "\r\n " in folded
    (calendar,) = parse(f"BEGIN:VCALENDAR\r\n{folded}END:VCALENDAR\r\n")
    (summary,) = calendar.lines
    assert summary.value == long.value
    with_param = write_line(Line("ATTENDEE", (("CN", ('Doe, Jane: "x"',)),), "mailto:j@example.com"))
    assert with_param.startswith('ATTENDEE;CN="Doe, Jane: x":mailto:')
    assert fold("A" * 200).split("\r\n")[1].startswith(" ")
