"""What ``net/oauth.py`` makes of a token endpoint's answer (no network: the process's client replaced)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from mail_imap_mcp.net import oauth


class _Answer:
    status_code = 200

    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = payload

    def json(self) -> dict[str, Any]:
        return self.payload


class _Client:
    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = payload

    def post(self, url: str, **_: Any) -> _Answer:
        return _Answer(self.payload)


@pytest.mark.parametrize("expires_in", ["\u00b2", "\u0663600", "soon", None])
def test_a_lifetime_int_cannot_read_is_the_default_not_a_crash(
    monkeypatch: pytest.MonkeyPatch, expires_in: Any
) -> None:
    """``"expires_in": "²"`` passed ``str.isdigit`` and raised ValueError from ``float``, a failure no
    registry words; a lifetime that is not ASCII digits is the default one."""
    payload = {"access_token": "a", "expires_in": expires_in}
    monkeypatch.setattr(oauth, "_client", lambda: _Client(payload))
    monkeypatch.setattr(oauth, "time", SimpleNamespace(monotonic=lambda: 1000.0))
    client = oauth.OAuthClient(
        oauth.Endpoints("https://p.example/auth", "https://p.example/token"), "app", ()
    )
    answer = oauth.token_request(client, {"grant_type": "refresh_token"}, timeout_s=5.0)
    assert answer.access.value == "a"
    assert answer.access.expires_at == 1000.0 + oauth.DEFAULT_EXPIRES_IN_S
