"""Shortening texts evenly until a result fits its bound (presentation/result_size.py)."""

from __future__ import annotations

import json

from mail_imap_mcp.presentation.result_size import ELLIPSIS, even_cap, fit, mapping_texts
from mail_imap_mcp.tools.get_message_raw import base64_chars, window_text


def test_even_cap_cuts_only_the_longest() -> None:
    assert even_cap([10, 100, 1000], 10_000) == 1000
    assert even_cap([10, 100, 1000], 310) == 200
    assert even_cap([10, 100, 1000], 0) == 0


def test_fit_reaches_its_limit_through_json_escapes_and_marks_each_cut() -> None:
    # Line breaks and quotes are two characters in JSON: one round of cutting by length falls short.
    texts = {"a": "x\n" * 5000, "b": '"q"' * 3000, "short": "kept"}
    size = lambda: len(json.dumps(texts, ensure_ascii=False))  # noqa: E731
    assert fit(size, mapping_texts(texts), 4000, mark=ELLIPSIS)
    assert size() <= 4000
    assert texts["short"] == "kept"
    assert texts["a"].endswith(ELLIPSIS) and texts["b"].endswith(ELLIPSIS)


def test_fit_within_its_limit_changes_nothing() -> None:
    texts = {"a": "abc"}
    assert not fit(lambda: 10, mapping_texts(texts), 10)
    assert texts == {"a": "abc"}


def test_a_raw_window_is_text_only_where_json_keeps_it_within_its_base64() -> None:
    assert window_text("Subject: Grüße\r\n".encode()) == "Subject: Grüße\r\n"
    assert window_text(b"caf\xe9") is None
    # Control characters are six characters each in JSON: such a window comes as base64.
    assert window_text(b"\x01" * 100) is None
    assert base64_chars(57_344) == 76_460
