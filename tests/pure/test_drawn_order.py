"""Text the question shows in its written order goes to the page when a mail program draws it in another
(issue 89 item 3): a table part out of its drawing order, a caption after the rows, a bidirectional control
anywhere the question shows text. The rules (content/drawn_order.py) and the route (services/send_review.py)
with the page's words (services/send_page.py). Pure: no server."""

from __future__ import annotations

import pytest

from mail_imap_mcp.asking.review import Review
from mail_imap_mcp.content.drawn_order import REORDERING, reordering_character, table_out_of_order
from mail_imap_mcp.services.send_page import message_page
from mail_imap_mcp.services.send_review import review
from mail_imap_mcp.smtp.outgoing import outgoing
from tests.support.mail.reordering_shapes import IN_ORDER, REORDERINGS, Reordering, drafted

#: The code points issue 89 names: ALM, LRM, RLM, LRE..RLO, LRI..PDI.
LISTED = [0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069]


def _review(shape: Reordering) -> Review:
    raw = drafted("me@example.org", "bob@example.com", shape)
    return review(outgoing(raw, frozenset({"me@example.org"}), "example.org"), raw, "default")


@pytest.mark.parametrize(
    ("html", "what"),
    [
        ("<table><tfoot><tr><td>F</td></tr></tfoot><tr><td>R</td></tr></table>", "a <tfoot> before rows"),
        ("<table><tfoot><tr><td>F</td></tr></tfoot><tfoot><tr><td>G</td></tr></tfoot></table>", "<tfoot> before"),
        ("<table><tbody><tr><td>R</td></tr></tbody><thead><tr><td>H</td></tr></thead></table>", "a <thead> after"),
        ("<table><tr><td>R</td></tr><caption>C</caption></table>", "a <caption> after the start"),
        ("<table><caption>A</caption><caption>B</caption></table>", "a <caption> after the start"),
        ("<table><tr><td><table><tr><td>R</td></tr><thead><tr><td>H</td></tr></thead></table></td></tr></table>",
         "a <thead> after"),
        ("<p>x</p><table> <caption>C</caption> <thead><tr><td>H</td></tr></thead><tr><td>R</td></tr>"
         "<tr><td>S</td></tr><tfoot><tr><td>F</td></tr></tfoot></table>", None),
        ("<table><thead><tr><td>H</td></tr></thead><thead><tr><td>I</td></tr></thead></table>", None),
        ("<table><tr><td>R</td></tr></table><p>after</p><table><tfoot><tr><td>F</td></tr></tfoot></table>", None),
    ],
)  # fmt: skip
def test_a_table_part_written_out_of_its_drawing_order_is_named(html: str, what: str | None) -> None:
    found = table_out_of_order(html)
    assert found == what if what is None else found is not None and what in found


@pytest.mark.parametrize("code", LISTED)
def test_every_bidirectional_control_reorders_and_plain_letters_do_not(code: int) -> None:
    assert code in REORDERING
    assert reordering_character(f"Pay {chr(code)}0089 EUR") == f"U+{code:04X}"
    assert reordering_character("Pay 0089 EUR, שלום, مرحبا \u200b\u00ad") is None


def test_only_the_listed_code_points_reorder() -> None:
    assert sorted(REORDERING) == LISTED


@pytest.mark.parametrize("name", sorted(REORDERINGS))
def test_text_drawn_in_another_order_goes_to_the_page_which_says_so_in_words(name: str) -> None:
    shape = REORDERINGS[name]
    asked = _review(shape)
    assert asked.page_only is not None and shape.reason in asked.page_only, asked.page_only
    raw = drafted("me@example.org", "bob@example.com", shape)
    page = message_page("sha256:" + "0" * 64, raw, why=asked.page_only).body_html()
    assert "because " + asked.page_only.replace("<", "&lt;").replace(">", "&gt;") in page


@pytest.mark.parametrize("code", LISTED)
def test_each_bidirectional_control_in_the_text_sends_the_draft_to_the_page(code: int) -> None:
    asked = _review(Reordering(text=f"Lunch {chr(code)}40 EUR"))
    assert asked.page_only == (
        f"its text holds characters that reorder it as it is drawn (U+{code:04X} in Text), so a mail program "
        "shows it in another order than it is written"
    )


@pytest.mark.parametrize("code", LISTED)
def test_each_bidirectional_control_in_the_html_sends_the_draft_to_the_page(code: int) -> None:
    """Written as a character reference, as the character, or in a link's address: the rendering the
    question shows leaves U+061C out, which a browser draws by, so the source is read too."""
    for html in (f"<p>Lunch &#x{code:x};40 EUR</p>", f"<p>Lunch {chr(code)}40 EUR</p>",
                 f'<p>Lunch <a href="https://example.com/&#{code};">40 EUR</a></p>'):  # fmt: skip
        asked = _review(Reordering(text="Lunch 40 EUR https example com", html=html))
        assert asked.page_only is not None and f"(U+{code:04X} in HTML part" in asked.page_only, html


def test_a_table_in_its_drawing_order_without_reordering_characters_is_asked_in_the_question() -> None:
    assert _review(IN_ORDER).page_only is None
