"""Invitations in the shapes three calendars send, written from each vendor's documented examples, and the
messages that carry them.

- Google Calendar: ``PRODID:-//Google Inc//Google Calendar 70.9054//EN``, a VTIMEZONE with
  ``X-LIC-LOCATION``, a weekly series (RRULE), ``ATTENDEE;CUTYPE=INDIVIDUAL;ROLE=REQ-PARTICIPANT;
  PARTSTAT=NEEDS-ACTION;RSVP=TRUE;CN=...;X-NUM-GUESTS=0:mailto:...``, a VALARM; the calendar in a
  ``text/calendar; method=REQUEST`` part of ``multipart/alternative`` and again as ``invite.ics``
  (``application/ics``), as Google's invitation mail carries it.
- Microsoft Exchange/Outlook: ``PRODID:Microsoft Exchange Server 2010``, Windows zone names
  (``TZID:W. Europe Standard Time``) with a VTIMEZONE of ``16010101`` rules, ``MAILTO:`` upper case,
  ``LANGUAGE=`` on text, ``X-MICROSOFT-CDO-*``; one occurrence of a series changed (RECURRENCE-ID) at
  SEQUENCE 2; the part base64-encoded, as Exchange sends it.
- Apple Calendar (iCloud): ``PRODID:-//Apple Inc.//Mac OS X 10.15.7//EN``, quoted parameters
  (``CN="..."``, ``EMAIL="..."``), a delegated attendee as RFC 5546 4.2.5 writes it (the delegator
  ``PARTSTAT=DELEGATED;DELEGATED-TO``, the delegate ``DELEGATED-FROM``), folded lines.
"""

from __future__ import annotations

import base64
import time

BERLIN = """BEGIN:VTIMEZONE
TZID:Europe/Berlin
X-LIC-LOCATION:Europe/Berlin
BEGIN:DAYLIGHT
TZOFFSETFROM:+0100
TZOFFSETTO:+0200
TZNAME:CEST
DTSTART:19700329T020000
RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU
END:DAYLIGHT
BEGIN:STANDARD
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
TZNAME:CET
DTSTART:19701025T030000
RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU
END:STANDARD
END:VTIMEZONE
"""

WINDOWS_ZONE = """BEGIN:VTIMEZONE
TZID:W. Europe Standard Time
BEGIN:STANDARD
DTSTART:16010101T030000
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
RRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=-1SU;BYMONTH=10
END:STANDARD
BEGIN:DAYLIGHT
DTSTART:16010101T020000
TZOFFSETFROM:+0100
TZOFFSETTO:+0200
RRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=-1SU;BYMONTH=3
END:DAYLIGHT
END:VTIMEZONE
"""


def google(organizer: str, attendees: list[str], *, uid: str = "7kukuqrfedlm2f9t0vr42q2qc8@google.com",
           sequence: int = 0, method: str = "REQUEST", summary: str = "Quarterly review") -> str:  # fmt: skip
    """A weekly series from Google Calendar, every attendee NEEDS-ACTION."""
    people = "".join(
        f"ATTENDEE;CUTYPE=INDIVIDUAL;ROLE=REQ-PARTICIPANT;PARTSTAT=NEEDS-ACTION;RSVP=\n TRUE;CN={a};X-NUM-GUESTS=0:mailto:{a}\n"
        for a in attendees
    )
    return (
        "BEGIN:VCALENDAR\nPRODID:-//Google Inc//Google Calendar 70.9054//EN\nVERSION:2.0\nCALSCALE:GREGORIAN\n"
        f"METHOD:{method}\n{BERLIN}BEGIN:VEVENT\n"
        "DTSTART;TZID=Europe/Berlin:20251202T100000\nDTEND;TZID=Europe/Berlin:20251202T110000\n"
        "RRULE:FREQ=WEEKLY;BYDAY=TU\nDTSTAMP:20251120T091500Z\n"
        f"ORGANIZER;CN=Bob Organizer:mailto:{organizer}\nUID:{uid}\n{people}"
        "X-MICROSOFT-CDO-OWNERAPPTID:-1893719744\nCREATED:20251120T091400Z\n"
        "DESCRIPTION:Join with Google Meet: https://meet.google.com/abc-defg-hij\\n\\nLearn more about Meet"
        " at:\n  https://support.google.com/a/users/answer/9282720\nLAST-MODIFIED:20251120T091500Z\n"
        f"LOCATION:Room 4\\, second floor\nSEQUENCE:{sequence}\nSTATUS:CONFIRMED\nSUMMARY:{summary}\n"
        "TRANSP:OPAQUE\nBEGIN:VALARM\nACTION:DISPLAY\nDESCRIPTION:This is an event reminder\n"
        "TRIGGER:-P0DT0H10M0S\nEND:VALARM\nEND:VEVENT\nEND:VCALENDAR\n"
    ).replace("\n", "\r\n")


def outlook(organizer: str, attendees: list[str], *, uid: str | None = None, sequence: int = 2,
            method: str = "REQUEST", summary: str = "Quarterly review") -> str:  # fmt: skip
    """One changed occurrence of a series, from Exchange (RECURRENCE-ID, Windows zone names)."""
    uid = uid or "040000008200E00074C5B7101A82E00800000000D0E2A1B0F65ADC01000000000000000010000000"
    people = "".join(
        f"ATTENDEE;ROLE=REQ-PARTICIPANT;PARTSTAT=NEEDS-ACTION;RSVP=TRUE;CN={a.split('@')[0].title()}:MAILTO:{a}\n"
        for a in attendees
    )
    zone = "W. Europe Standard Time"
    return (
        f"BEGIN:VCALENDAR\nMETHOD:{method}\nPRODID:Microsoft Exchange Server 2010\nVERSION:2.0\n{WINDOWS_ZONE}"
        f"BEGIN:VEVENT\nORGANIZER;CN=Bob Organizer:MAILTO:{organizer}\n{people}"
        "DESCRIPTION;LANGUAGE=en-US:Moved by an hour.\\n\n"
        f"UID:{uid}\n"
        f"RECURRENCE-ID;TZID={zone}:20251209T100000\nSUMMARY;LANGUAGE=en-US:{summary}\n"
        f"DTSTART;TZID={zone}:20251209T110000\nDTEND;TZID={zone}:20251209T120000\n"
        "CLASS:PUBLIC\nPRIORITY:5\nDTSTAMP:20251201T080000Z\nTRANSP:OPAQUE\nSTATUS:CONFIRMED\n"
        f"SEQUENCE:{sequence}\nLOCATION;LANGUAGE=en-US:Room 1\nX-MICROSOFT-CDO-APPT-SEQUENCE:{sequence}\n"
        "X-MICROSOFT-CDO-BUSYSTATUS:TENTATIVE\nX-MICROSOFT-CDO-INTENDEDSTATUS:BUSY\n"
        "X-MICROSOFT-CDO-ALLDAYEVENT:FALSE\nX-MICROSOFT-CDO-IMPORTANCE:1\nX-MICROSOFT-CDO-INSTTYPE:3\n"
        "X-MICROSOFT-DONOTFORWARDMEETING:FALSE\nX-MICROSOFT-DISALLOW-COUNTER:FALSE\n"
        "BEGIN:VALARM\nDESCRIPTION:REMINDER\nTRIGGER;RELATED=START:-PT15M\nACTION:DISPLAY\nEND:VALARM\n"
        "END:VEVENT\nEND:VCALENDAR\n"
    ).replace("\n", "\r\n")


def apple(organizer: str, delegator: str, delegate: str, others: list[str], *,
          uid: str = "8E4BB1A3-6D8C-4C8F-9D6B-1F0E9B6E2A11", sequence: int = 1, method: str = "REQUEST",
          summary: str = "Quarterly review") -> str:  # fmt: skip
    """A single event from Apple Calendar; ``delegator`` delegated to ``delegate`` (RFC 5546 4.2.5)."""
    people = (
        f'ATTENDEE;CN="Delegator";CUTYPE=INDIVIDUAL;DELEGATED-TO="mailto:{delegate}";EMAIL="{delegator}";'
        f"\n PARTSTAT=DELEGATED;ROLE=REQ-PARTICIPANT:mailto:{delegator}\n"
        f'ATTENDEE;CN="Delegate";CUTYPE=INDIVIDUAL;DELEGATED-FROM="mailto:{delegator}";EMAIL="{delegate}";'
        f"\n PARTSTAT=NEEDS-ACTION;ROLE=REQ-PARTICIPANT;RSVP=TRUE:mailto:{delegate}\n"
        + "".join(
            f'ATTENDEE;CN="{a}";CUTYPE=INDIVIDUAL;EMAIL="{a}";PARTSTAT=ACCEPTED;ROLE=REQ-PA\n RTICIPANT:mailto:{a}\n'
            for a in others
        )
    )
    return (
        "BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//Apple Inc.//Mac OS X 10.15.7//EN\n"
        f"METHOD:{method}\nCALSCALE:GREGORIAN\n{BERLIN}BEGIN:VEVENT\nCREATED:20251120T091400Z\n"
        f"UID:{uid}\nDTEND;TZID=Europe/Berlin:20251203T153000\nTRANSP:OPAQUE\n{people}"
        f'ORGANIZER;CN="Bob Organizer";EMAIL="{organizer}":mailto:{organizer}\n'
        f"SUMMARY:{summary}\nDTSTART;TZID=Europe/Berlin:20251203T140000\nDTSTAMP:20251120T091500Z\n"
        f"SEQUENCE:{sequence}\nX-APPLE-TRAVEL-ADVISORY-BEHAVIOR:AUTOMATIC\nEND:VEVENT\nEND:VCALENDAR\n"
    ).replace("\n", "\r\n")


def invitation_mail(sender: str, to: str, calendar: str, *, vendor: str = "google", subject: str = "Invitation: Quarterly review",
                    method: str = "REQUEST") -> bytes:  # fmt: skip
    """The message an invitation arrives in: text, HTML and the calendar as ``multipart/alternative``
    (Google adds the calendar once more as ``invite.ics``; Exchange base64-encodes it)."""
    boundary, mixed = f"alt-{time.monotonic_ns()}", f"mix-{time.monotonic_ns()}"
    if vendor == "outlook":
        encoded = base64.encodebytes(calendar.encode()).decode().replace("\n", "\r\n")
        calendar_part = (
            f'Content-Type: text/calendar; charset="utf-8"; method={method}\r\n'
            f"Content-Transfer-Encoding: base64\r\n\r\n{encoded}"
        )
    else:
        calendar_part = (
            f"Content-Type: text/calendar; charset=UTF-8; method={method}\r\n"
            f"Content-Transfer-Encoding: 7bit\r\n\r\n{calendar}"
        )
    alternative = (
        f'Content-Type: multipart/alternative; boundary="{boundary}"\r\n\r\n'
        f"--{boundary}\r\nContent-Type: text/plain; charset=UTF-8\r\n\r\nYou have been invited.\r\n"
        f"--{boundary}\r\nContent-Type: text/html; charset=UTF-8\r\n\r\n<p>You have been invited.</p>\r\n"
        f"--{boundary}\r\n{calendar_part}\r\n--{boundary}--\r\n"
    )
    head = (
        f"From: Bob Organizer <{sender}>\r\nTo: {to}\r\nSubject: {subject}\r\n"
        f"Date: Thu, 20 Nov 2025 09:15:00 +0000\r\nMessage-ID: <invite-{time.monotonic_ns()}@example.com>\r\n"
        "MIME-Version: 1.0\r\n"
    )
    if vendor != "google":
        return (head + alternative).encode()
    attached = base64.encodebytes(calendar.encode()).decode().replace("\n", "\r\n")
    return (
        head + f'Content-Type: multipart/mixed; boundary="{mixed}"\r\n\r\n--{mixed}\r\n{alternative}'
        f'--{mixed}\r\nContent-Type: application/ics; name="invite.ics"\r\n'
        'Content-Disposition: attachment; filename="invite.ics"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
        f"{attached}\r\n--{mixed}--\r\n"
    ).encode()
