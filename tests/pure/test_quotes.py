"""content/quotes.py: the new text of a message, on realistic replies in many styles and languages."""

from __future__ import annotations

import email
from email import policy

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mail_imap_mcp.content.quotes import MAX_SIGNATURE_LINES, NewText, new_text
from tests.support.mail.realmail import realistic_corpus

GMAIL_REPLY = """\
Sounds good, let's meet at 3pm in the small room.

Cheers,
Bob

On Tue, 18 Nov 2026 at 14:02, Ana Lima <ana.lima@example.org> wrote:
> Hi Bob,
>
> can we move the review to Thursday?
>
> Ana
"""

WRAPPED_ATTRIBUTION = """\
Yes, approved.

On Tue, Nov 18, 2026 at 2:02 PM Ana Lima via the finance list <
finance@lists.example.org> wrote:

> Please approve the attached PO.
"""


@pytest.mark.parametrize(
    ("attribution", "language"),
    [
        ("On Tue, 18 Nov 2026 at 14:02, Ana <ana@example.org> wrote:", "English"),
        ("Am 18.11.2026 um 14:02 schrieb Ana Lima <ana@example.org>:", "German"),
        ("Am Di., 18. Nov. 2026 um 14:02 Uhr schrieb Ana Lima <ana@example.org>:", "German (Gmail)"),
        ("Le mar. 18 nov. 2026 à 14:02, Ana Lima <ana@example.org> a écrit :", "French"),
        ("El mar, 18 nov 2026 a las 14:02, Ana Lima (<ana@example.org>) escribió:", "Spanish"),
        ("Il giorno mar 18 nov 2026 alle ore 14:02 Ana Lima <ana@example.org> ha scritto:", "Italian"),
        ("Op di 18 nov. 2026 om 14:02 schreef Ana Lima <ana@example.org>:", "Dutch"),
        ("Em ter., 18 de nov. de 2026 às 14:02, Ana Lima <ana@example.org> escreveu:", "Portuguese"),
        ("Den tis 18 nov. 2026 kl 14:02 skrev Ana Lima <ana@example.org>:", "Swedish"),
        ("tir. 18. nov. 2026 kl. 14:02 skrev Ana Lima <ana@example.org>:", "Norwegian"),
        ("W dniu 18.11.2026 o 14:02, Ana Lima <ana@example.org> napisał:", "Polish"),
        ("вт, 18 нояб. 2026 г. в 14:02, Ana Lima <ana@example.org>:", "Russian without verb"),
        ("18.11.2026 14:02, Ana Lima пишет:", "Russian"),
    ],
)
def test_localised_attribution_lines_and_their_quote_are_dropped(attribution: str, language: str) -> None:
    body = f"Danke, passt so.\n\n{attribution}\n> Hallo,\n> passt der Termin?\n"
    result = new_text(body)
    if language == "Russian without verb":
        # No verb to recognise: the line stays (never guess), the quote below it still goes.
        assert result.text == f"Danke, passt so.\n\n{attribution}"
    else:
        assert result.text == "Danke, passt so.", language
    assert result.dropped_quote and not result.dropped_signature


def test_gmail_reply_keeps_greeting_and_sign_off_drops_the_quote() -> None:
    result = new_text(GMAIL_REPLY)
    assert result == NewText("Sounds good, let's meet at 3pm in the small room.\n\nCheers,\nBob", True, False)


def test_attribution_wrapped_onto_two_lines() -> None:
    assert new_text(WRAPPED_ATTRIBUTION).text == "Yes, approved."


def test_signature_after_dash_dash_space_is_dropped_up_to_the_quote() -> None:
    body = (
        "Thanks, I'll sign it today.\n\n-- \nBob Smith\nHead of Operations | ACME Corp\n+1 555 0100\n\n"
        "On Mon, 17 Nov 2026, Ana wrote:\n> Can you sign the contract?\n"
    )
    result = new_text(body)
    assert result == NewText("Thanks, I'll sign it today.", True, True)


def test_signature_without_the_trailing_space_and_at_the_end() -> None:
    result = new_text("See you at 3.\n--\nBob\nSent with care\n")
    assert result == NewText("See you at 3.", False, True)


def test_a_long_block_after_dashes_is_text_not_a_signature() -> None:
    rest = "\n".join(f"item {i} of the list that matters" for i in range(MAX_SIGNATURE_LINES + 1))
    body = f"Here is the plan:\n--\n{rest}\n"
    assert new_text(body) == NewText(body)


def test_outlook_history_below_the_reply_is_dropped() -> None:
    body = (
        "Hi Ana,\n\nthe invoice is paid.\n\nRegards\nTom\n\n"
        "________________________________\n"
        "From: Ana Lima <ana.lima@example.org>\n"
        "Sent: Tuesday, November 18, 2026 2:02 PM\n"
        "To: Tom O'Neil <tom@acme.example>\n"
        "Cc: Billing <billing@acme.example>\n"
        "Subject: Invoice 4711\n\n"
        "Hi Tom, has invoice 4711 been paid?\n"
    )
    assert new_text(body) == NewText("Hi Ana,\n\nthe invoice is paid.\n\nRegards\nTom", True, False)


@pytest.mark.parametrize(
    "header",
    [
        "-----Original Message-----\nFrom: Ana\nSent: Tuesday\nTo: Tom\nSubject: x",
        "-----Ursprüngliche Nachricht-----\nVon: Ana\nGesendet: Dienstag\nAn: Tom\nBetreff: x",
        "De : Ana Lima <ana@example.org>\nEnvoyé : mardi 18 novembre 2026 14:02\nÀ : Tom\nObjet : x",
        "De: Ana\nEnviado: martes\nPara: Tom\nAsunto: x",
        "Da: Ana\nInviato: martedì\nA: Tom\nOggetto: x",
        "Van: Ana\nVerzonden: dinsdag\nAan: Tom\nOnderwerp: x",
        "Från: Ana\nSkickat: tisdag\nTill: Tom\nÄmne: x",
        "*From:* Ana\n*Sent:* Tuesday\n*To:* Tom\n*Subject:* x",
    ],
)
def test_outlook_header_blocks_in_several_languages(header: str) -> None:
    body = f"Erledigt.\n\n{header}\n\nold text that was answered\n"
    assert new_text(body).text == "Erledigt."


def test_inline_replies_keep_every_answer() -> None:
    body = (
        "On Tue, Ana wrote:\n"
        "> 1. Can you do Thursday?\n"
        "Yes, after 2pm.\n\n"
        "> 2. Do we need the projector?\n"
        "No, I'll bring my laptop.\n\n"
        "> Thanks!\n"
    )
    result = new_text(body)
    assert result.text == "Yes, after 2pm.\n\nNo, I'll bring my laptop."
    assert result.dropped_quote


def test_greater_than_inside_prose_is_not_a_quote() -> None:
    body = "The load went from 3 > 2 overnight, and latency > 200 ms at peak.\nWe should look at it."
    assert new_text(body) == NewText(body)


def test_attribution_like_line_without_a_quote_below_stays() -> None:
    body = "On Monday the customer wrote:\nthe dashboard is slow again.\nCan you check?"
    assert new_text(body) == NewText(body)


def test_entirely_quoted_message_comes_back_whole() -> None:
    body = "On Tue, Ana wrote:\n> only the quote\n> nothing new\n"
    assert new_text(body) == NewText(body)
    assert new_text("-- \nBob Smith\nACME\n") == NewText("-- \nBob Smith\nACME\n")


def test_mobile_trailers_are_signatures() -> None:
    assert new_text("Ok, see you there.\n\nSent from my iPhone\n") == NewText(
        "Ok, see you there.", False, True
    )
    assert new_text("Passt.\n\nVon meinem iPhone gesendet").text == "Passt."
    assert new_text("Sent from my iPhone") == NewText("Sent from my iPhone")


def test_github_notification_footer() -> None:
    body = (
        "@ana I rebased on main; the timeout was the DNS lookup.\n\n"
        "On Mon, 17 Nov 2026 at 09:14, Ana Lima wrote:\n> Still failing on arm64.\n\n"
        "—\nReply to this email directly, view it on GitHub:\nhttps://github.example/acme/platform/pull/1\n"
    )
    assert new_text(body) == NewText("@ana I rebased on main; the timeout was the DNS lookup.", True, True)


def test_crlf_and_text_without_anything_to_drop_is_returned_unchanged() -> None:
    body = "Line one\r\n\r\nLine two\r\n"
    assert new_text(body) == NewText(body)
    assert new_text("") == NewText("")


def test_the_realistic_corpus_yields_exactly_what_the_sender_wrote() -> None:
    replies = 0
    for message in realistic_corpus(60, seed=3):
        if not message.kind.startswith("reply"):
            continue
        replies += 1
        parsed = email.message_from_bytes(message.raw, policy=policy.default)
        body = parsed.get_body(("plain",)).get_content()  # type: ignore[union-attr]
        result = new_text(body)
        assert result.text == message.new_text.strip(), message.kind
        assert result.dropped_quote
    assert replies >= 15


# -- properties ---------------------------------------------------------------------------------

_words = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")) | st.sampled_from(" >-—:\t"),
    max_size=60,
)
_lines = st.lists(
    st.one_of(
        _words,
        _words.map(lambda w: "> " + w),
        st.sampled_from(
            [
                "",
                "-- ",
                "--",
                "On Tue, Ana <a@example.org> wrote:",
                "Am 18.11.2026 schrieb Ana:",
                "From: Ana",
                "Sent: Tuesday",
                "To: Tom",
                "Subject: x",
                "-----Original Message-----",
                "Sent from my iPhone",
            ]
        ),
    ),
    max_size=30,
)


@settings(max_examples=400, deadline=None)
@given(_lines)
def test_never_empty_when_the_input_has_text(lines: list[str]) -> None:
    body = "\n".join(lines)
    result = new_text(body)
    if body.strip():
        assert result.text.strip()
    if not result.dropped:
        assert result.text == body


@settings(max_examples=400, deadline=None)
@given(_lines)
# Regression (found by Hypothesis): a quote line inside an Outlook header block kept its From: line out
# of reach of its Subject: line until the quote was dropped, so the second run dropped the block.
@example(["0", "FROM:", "", "", "", "", ">", "TO:", "SENT:", "SUBJECT:"])
# ... and a delimiter whose block reached past a second delimiter was too long to drop until the second
# block was dropped: each delimiter's block now ends at the next one.
@example(["0", "--", *["0"] * 11, "--", "0"])
# ... and a bare delimiter and a quote counted among the lines of a header block kept its Subject: line
# out of reach until both were dropped: a signature's lines, an attribution's, any line a run drops could
# do the same, so the run now repeats on its own result until that changes nothing.
@example(["0", "FROM:", "0", "0", "0", "0", "TO:", "SENT:", "--", ">", "SUBJECT:"])
def test_idempotent(lines: list[str]) -> None:
    once = new_text("\n".join(lines))
    assert new_text(once.text).text == once.text


@settings(max_examples=200, deadline=None)
@given(st.lists(_words.filter(lambda w: not w.lstrip(" \t").startswith(">")), max_size=20))
def test_unquoted_text_without_delimiters_keeps_every_word(lines: list[str]) -> None:
    lines = [line for line in lines if line.strip() not in {"--", "—"}]
    body = "\n".join(lines)
    result = new_text(body)
    if not result.dropped:
        assert result.text == body
    else:
        # Only a trailer or an attribution can have gone: every other line survives.
        kept = set(result.text.split("\n"))
        assert all(line.rstrip() in kept or not line.strip() for line in lines[:-1] if ":" not in line)


def test_enough_stops_early_and_keeps_the_start() -> None:
    body = "First line of new text.\n" * 50 + "\nOn Tue, Ana wrote:\n> old\n"
    whole = new_text(body)
    early = new_text(body, enough=100)
    assert whole.dropped_quote and not early.dropped
    assert early.text.startswith("First line of new text.\nFirst line")
    quoted_first = "> old\n> older\n\n" + body
    early = new_text(quoted_first, enough=100)
    assert early.dropped_quote and early.text.startswith("First line") and len(early.text) < 200


@settings(max_examples=300, deadline=None)
@given(_lines, st.integers(1, 200))
# Found by Hypothesis: the blank line before a trailer an early stop keeps is kept with it.
@example(["0", ">", "", "SENT FROM MY 0", ">"], 2)
def test_enough_gives_a_prefix_of_the_whole_answer(lines: list[str], enough: int) -> None:
    body = "\n".join(lines)
    whole, early = new_text(body), new_text(body, enough=enough)
    if early.dropped and whole.dropped:
        # What was read before stopping is what a full reading keeps there, except that a "Sent from
        # my ..." line (and the blank lines before it) counts as a trailer only when nothing follows it,
        # which an early stop cannot see.
        from mail_imap_mcp.content.quotes import _MOBILE_TRAILER

        kept = whole.text.split("\n")
        extra = [line for line in early.text.split("\n") if line.strip() and line not in kept]
        assert all(_MOBILE_TRAILER.match(line.strip()) for line in extra), (early, whole)


@settings(max_examples=400, deadline=None)
@given(_lines, st.sampled_from(["\n", "\r\n", "\r"]))
def test_the_whole_text_shortcut_never_changes_the_answer(lines: list[str], newline: str) -> None:
    """Text the shortcut passes through unread is text the line-by-line reading would keep whole."""
    from mail_imap_mcp.content import quotes

    body = newline.join(lines)
    fast = new_text(body)
    patterns, quotes._MAYBE = quotes._MAYBE, [((), quotes.re.compile(r"(?s)."))]  # never take the shortcut
    try:
        slow = new_text(body)
    finally:
        quotes._MAYBE = patterns
    assert fast == slow
