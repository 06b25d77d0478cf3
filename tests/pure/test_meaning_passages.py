"""The passages of a message that search by meaning embeds (issue 80): subject (never the sender's name:
issue 89 item 6), what the sender wrote (never the quoted thread or the signature: the ``quoted`` column) and the head of the
attachments' text; a long message in several passages, each within bounds, cut at sentence ends."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from mail_imap_mcp.index.passages import (
    ATTACHMENT_HEAD_CHARS,
    BODY_CHARS_READ,
    MAX_BODY_PASSAGES,
    MAX_PASSAGES,
    PASSAGE_CHARS,
    passages,
)
from mail_imap_mcp.index.store import TEXT_COLUMNS


def texts(**columns: str) -> tuple[str, ...]:
    """A message's text columns in :data:`TEXT_COLUMNS`' order, empty but for ``columns``."""
    return tuple(columns.get(name, "") for name in TEXT_COLUMNS)


def test_a_short_message_is_one_passage_of_its_subject_and_new_text() -> None:
    found = passages(
        texts(
            subject="Re: Heating in the flat",
            sender='"Mr. Grant (Landlord)" <grant@lettings.example>',
            recipients_to="Ana <ana@example.org>",
            message_id="<abc@example.org>",
            body="The engineer comes on Tuesday to bleed the radiators.",
            quoted="> Is anyone fixing the heating?\n-- \nAna\nSent from my phone",
            attachments="boiler.pdf",
        )
    )
    assert found == ["Heating in the flat. The engineer comes on Tuesday to bleed the radiators."]


def test_the_sender_s_name_is_no_part_of_a_passage() -> None:
    """Issue 89 item 6: a name embedded made a sender's mail near all of its own, whatever the topic;
    ``query`` and ``from`` find a sender."""
    for sender in ("Billing Team <billing@hosting.example>", "billing@hosting.example", "Dana Okafor <d@x>"):
        assert passages(texts(subject="Invoice 4411", sender=sender, body="Due in May.")) == [
            "Invoice 4411. Due in May."
        ], sender


def test_reply_and_forward_prefixes_are_left_out_of_the_subject() -> None:
    for subject in (
        "Re: Offer letter",
        "RE: Fwd: Offer letter",
        "AW: WG: Offer letter",
        "Re[2]: TR: Offer letter",
    ):
        assert passages(texts(subject=subject)) == ["Offer letter"], subject


def test_links_addresses_and_runs_of_symbols_are_left_out() -> None:
    body = (
        "See https://tracker.example/t/abc?utm_source=x and www.example.org/page ==========\n"
        "Write to rent@lettings.example ... or call (<https://lettings.example/rent>). Token "
        "dGhpc2lzYWxvbmdiYXNlNjRibG9ib2ZkYXRhMTIzNDU2Nzg5MA mail@me"
    )
    (found,) = passages(texts(subject="Rent", body=body))
    assert found == "Rent. See and Write to or call Token"


def test_a_long_message_is_cut_at_sentence_ends_into_a_few_passages_each_with_its_heading() -> None:
    sentence = "The boiler was serviced and the radiators were bled on the second floor. "
    body = sentence * 60  # about 4,400 characters: more than the passages read
    found = passages(texts(subject="Heating", sender="Grant <g@x.example>", body=body))
    assert len(found) == MAX_BODY_PASSAGES
    for passage in found:
        assert passage.startswith("Heating. The boiler")
        assert passage.endswith("second floor.")
        assert len(passage) <= len("Heating. ") + PASSAGE_CHARS
        assert len(passage) > PASSAGE_CHARS // 2


def test_text_without_sentence_ends_is_cut_at_a_space() -> None:
    body = " ".join(f"word{n}" for n in range(400))
    found = passages(texts(body=body))
    assert len(found) == MAX_BODY_PASSAGES
    rejoined = " ".join(found)
    assert body.startswith(rejoined)  # no word cut in two, none lost between passages
    assert all(len(passage) <= PASSAGE_CHARS for passage in found)


def test_only_the_start_of_a_long_body_is_read() -> None:
    # What the passages hold, and a third more: the rest of a 4 KB body is never scanned.
    body = "word " * (BODY_CHARS_READ // 5) + "Unseen tail."
    assert "Unseen" not in " ".join(passages(texts(body=body)))
    assert "Seen." in passages(texts(body="Seen. " + "word " * 100))[0]


def test_the_head_of_the_attachments_text_is_a_passage_of_its_own() -> None:
    found = passages(
        texts(
            subject="Signed lease",
            body="Attached as discussed.",
            attachment_text="TENANCY AGREEMENT. This agreement is made between the landlord and the tenant. "
            * 40,
        )
    )
    assert found[0] == "Signed lease. Attached as discussed."
    (attached,) = found[1:]
    assert attached.startswith("Signed lease. TENANCY AGREEMENT. This agreement")
    assert len(attached) <= len("Signed lease. ") + ATTACHMENT_HEAD_CHARS


def test_a_message_without_a_body_is_its_heading_and_one_without_any_text_an_empty_passage() -> None:
    assert passages(texts(subject="Lunch?", sender="Bo <bo@x.example>")) == ["Lunch?"]
    assert passages(texts()) == [""]
    assert passages(texts(quoted="> only a quote", attachments="a.pdf")) == [""]


@given(st.lists(st.text(max_size=3000), min_size=len(TEXT_COLUMNS), max_size=len(TEXT_COLUMNS)))
def test_any_message_has_at_least_one_and_at_most_a_few_passages_of_bounded_length(
    columns: list[str],
) -> None:
    found = passages(tuple(columns))
    assert 1 <= len(found) <= MAX_PASSAGES
    heading = len(columns[TEXT_COLUMNS.index("subject")]) + 2
    assert all(len(passage) <= heading + PASSAGE_CHARS for passage in found)
    assert all(passage == passage.strip() for passage in found)


#: What the noise of a text was, in one pattern tried at every character (it took half the making of
#: passages): the text as it is cleaned now must read the same.
_ONE_PATTERN = re.compile(r"(?<!\S)(?:[^\w\s]*(?:https?://|www\.)\S+|[^\s@]+@\S+)|[^\w\s]{3,}|\b\w{40,}")
_NOISY_PARTS = ("http://x.y/z", "www.a.b", "a@b.c", "@", "://", "--", "---", ".:!", "a" * 39, "é" * 41)


@given(
    st.lists(
        st.one_of(st.sampled_from(_NOISY_PARTS), st.text(max_size=6), st.sampled_from(" \n")), max_size=12
    )
)
def test_links_symbols_and_long_words_are_left_out_as_one_pattern_left_them_out(parts: list[str]) -> None:
    body = "".join(parts)
    assert passages(texts(body=body)) == [" ".join(_ONE_PATTERN.sub(" ", body).split())]
