"""Is an HTML part plain, so that its text rendering is all a reader sees of it (content/html_plain.py)? And
the addresses an HTML part would load from, which the approval page lists and never fetches. Pure."""

from __future__ import annotations

import pytest

from mail_imap_mcp.content.html_plain import not_plain, resources


@pytest.mark.parametrize(
    "html",
    [
        "<p>Hi <b>Bob</b>,<br>see <a href='https://example.org/q3'>the report</a>.</p>",
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=UTF-8"></head>'
        "<body><div>Thanks</div><blockquote><p>Earlier</p></blockquote></body></html>",  # Thunderbird's
        "<ul><li>one</li></ul><table><tr><td>a</td><th>b</th></tr></table><pre>  kept</pre>",
    ],
)
def test_text_and_its_structure_are_plain(html: str) -> None:
    assert not_plain(html) is None


@pytest.mark.parametrize(
    ("html", "what"),
    [
        ("<p>x</p><style>p::before{content:'pay'}</style>", "a <style> element"),
        ('<p style="color:#fff">pay</p>', "an attribute style= on <p>"),
        ('<font color="white">pay</font>', "a <font> element"),
        ("<p>10<sup>3</sup></p>", "a <sup> element"),
        ("<p><s>100</s> 9,800 EUR</p>", "a <s> element"),
        ('<a href="javascript:pay()">x</a>', "a link to an address that is not http, https or mailto"),
        (
            '<meta http-equiv="refresh" content="0;url=https://evil.example">',
            "a <meta> element other than its charset",
        ),
        ("<!-- pay --><p>x</p>", "a comment"),
        ("<p>x</p></html><!-- after the end -->", "a comment"),
        ("<details><summary>x</summary>pay</details>", "a <details> element"),
        ("<div>" * 5_000 + "x", "elements nested deeper than a browser shows"),
    ],
)
def test_what_a_text_rendering_leaves_out_is_named(html: str, what: str) -> None:
    assert not_plain(html) == what


def test_every_address_it_would_load_from_is_listed_once_and_its_own_data_is_not() -> None:
    html = (
        '<link rel="stylesheet" href="https://a.example/s.css"><style>@import "https://a.example/i.css";'
        "p{background:url( 'https://a.example/bg.png' )}</style>"
        '<img src="https://a.example/p.png" srcset="https://a.example/p2.png 2x, https://a.example/p3.png 3x">'
        '<img src="data:image/png;base64,AAAA"><p style="background:url(https://a.example/p.png)">x</p>'
        '<meta http-equiv="refresh" content="0; url=https://a.example/go"><a href="https://a.example/link">l</a>'
        '<svg><image href="https://a.example/svg.png"/></svg>'
    )
    assert resources(html) == [
        "https://a.example/s.css",
        "https://a.example/i.css",
        "https://a.example/bg.png",
        "https://a.example/p.png",
        "https://a.example/p2.png",
        "https://a.example/p3.png",
        "https://a.example/go",
        "https://a.example/svg.png",
    ]
