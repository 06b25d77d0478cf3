"""Search filters: Unicode normalisation of search text, and the cursor digest that binds a filter."""

from __future__ import annotations

import unicodedata

import pytest

from mail_imap_mcp.imap.search import SearchFilter
from mail_imap_mcp.tools.search_messages import SearchMessagesInput, _digest, _filter

NFC = "Jürgen Größe"
NFD = unicodedata.normalize("NFD", NFC)
TEXT_ARGUMENTS = ("query", "from", "to", "cc", "subject", "body")


def test_fixture_forms_differ() -> None:
    assert NFD != NFC and "u\u0308" in NFD


@pytest.mark.parametrize("field", ["text", "from_", "to", "cc", "subject", "body"])
def test_search_filter_sends_nfc(field: str) -> None:
    # Regression: decomposed search text was sent as given and matched differently per server.
    search = SearchFilter(**{field: NFD})
    assert getattr(search, field) == NFC
    assert NFC in search.criteria()
    assert NFD not in search.criteria()


def test_search_filter_keeps_ascii_keyword_and_other_keys() -> None:
    search = SearchFilter(subject="Gru\u0308\u00dfe", keyword="$Important", unread_only=True)
    assert search.criteria() == [b"SUBJECT", "Grüße", b"UNSEEN", b"KEYWORD", b"$Important"]


def test_needs_utf8_is_judged_on_the_normalised_text() -> None:
    # U+212A KELVIN SIGN is canonically "K": after NFC the search is plain ASCII.
    search = SearchFilter(subject="\u212aelvin")
    assert search.subject == "Kelvin"
    assert search.needs_utf8 is False
    assert SearchFilter(subject=NFD).needs_utf8 is True


@pytest.mark.parametrize("argument", TEXT_ARGUMENTS)
def test_tool_input_is_normalised_before_filter_and_digest(argument: str) -> None:
    decomposed = SearchMessagesInput.model_validate({argument: NFD})
    composed = SearchMessagesInput.model_validate({argument: NFC})
    assert decomposed.model_dump(by_alias=True)[argument] == NFC
    assert _filter(decomposed).criteria() == _filter(composed).criteria()
    # A cursor issued for the NFD query is accepted with the NFC query, and the other way round.
    assert _digest(decomposed) == _digest(composed)
    assert _digest(decomposed) != _digest(SearchMessagesInput.model_validate({argument: "Jurgen Grosse"}))


def test_has_keyword_stays_an_ascii_atom() -> None:
    with pytest.raises(ValueError):
        SearchMessagesInput.model_validate({"has_keyword": "Gro\u0308ße"})
