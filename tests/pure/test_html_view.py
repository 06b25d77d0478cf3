"""The copy of an HTML part the approval page shows (content/html_view.py): what would fetch made inert,
``cid:`` images resolved, and nothing else changed, checked by a browser's parse. In the real browser:
tests/integration/asking/test_send_approval_exact.py."""

from __future__ import annotations

import pytest

from mail_imap_mcp.content.html_view import FETCH_ONLY_HINTS, shown_copy


@pytest.mark.parametrize("hint", sorted(FETCH_ONLY_HINTS))
def test_a_fetch_only_hint_is_made_inert_in_place(hint: str) -> None:
    source = f'<html><head><LINK Rel="icon {hint.upper()}" href="https://author.example/x"></head><p>Hi</p>'
    assert shown_copy(source) == source.replace(hint.upper(), f"x-not-fetched-{hint.upper()}")


def test_a_refresh_and_a_frame_are_made_inert_and_a_cid_image_gets_its_part() -> None:
    source = (
        "<meta http-equiv=Refresh content='0;url=https://author.example/'><p>Hi</p>"
        '<iframe src="https://author.example/f"></iframe><img src="CID:pic%40x" alt=""><img src="cid:other">'
    )
    assert shown_copy(source, {"pic@x": "data:image/png;base64,AA=="}) == (
        "<meta http-equiv=\"x-not-run-refresh\" content='0;url=https://author.example/'><p>Hi</p>"
        '<iframe src="about:blank#https://author.example/f"></iframe>'
        '<img src="data:image/png;base64,AA==" alt=""><img src="cid:other">'
    )


@pytest.mark.parametrize(
    "source",
    [
        "<p>plain</p><link rel=stylesheet href=x>",
        "<!-- <link rel=preconnect href=x> --><p>a comment</p>",
        "<textarea><link rel=preconnect href=x></textarea>",
        "<script>'<link rel=preconnect href=x>'</script>",
        "<link rel=x rel=preconnect href=y>",  # the second rel is not the element's
    ],
)
def test_what_fetches_nothing_is_left_byte_for_byte(source: str) -> None:
    assert shown_copy(source) == source


def test_a_hint_written_with_a_character_reference_is_found_as_a_browser_reads_it() -> None:
    assert shown_copy("<link rel=pre&#99;onnect href=x>") == '<link rel="x-not-fetched-preconnect" href=x>'


def test_a_hint_the_scan_cannot_make_inert_exactly_cannot_be_shown() -> None:
    """A hint the scan takes for a comment's text and a browser for an element (``<!--->`` is a whole
    comment to a browser): refused rather than shown fetching."""
    with pytest.raises(ValueError, match="resource hint"):
        shown_copy("<!---><link rel=preconnect href=x><!-- -->")


@pytest.mark.parametrize("opened", ["<!-- ", "<script>", "<style>", "<textarea>", "<title>"])
def test_what_runs_to_the_end_unclosed_is_left_as_a_browser_reads_it(opened: str) -> None:
    """A comment, script, style, textarea or title never closed holds the rest of the document, as a
    browser reads it: the scan took the tags after it for tags (the copy then differed from the source
    where nothing is drawn, and the message could not be shown), and each such opening scanned to the
    end again (a source of a few hundred thousand unclosed openings took hours)."""
    source = f'<link rel="preconnect" href="https://a.example">{opened}<link rel="preconnect" href="https://b.example">'
    assert shown_copy(source) == source.replace('rel="preconnect"', 'rel="x-not-fetched-preconnect"', 1)
