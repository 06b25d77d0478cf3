"""SASL with an OAuth 2.0 access token, as IMAP's AUTHENTICATE and SMTP's AUTH both carry it: the
client's first message (Google's ``XOAUTH2``, RFC 7628 ``OAUTHBEARER``) and the exchange that reads the
server's refusal. Tokens are never logged, never put in an exception's text."""

from __future__ import annotations

from mail_imap_mcp.net.oauth_challenge import OAuthChallenge

#: The OAuth 2.0 SASL mechanisms this client speaks.
OAUTH_MECHANISMS = ("XOAUTH2", "OAUTHBEARER")
# A server that keeps challenging after the token was refused gets the conversation aborted.
_MAX_CHALLENGES = 3


def oauth_initial_response(mechanism: str, username: str, token: str, host: str, port: int) -> bytes:
    """The client's first SASL message: Google's XOAUTH2 format, or RFC 7628 OAUTHBEARER (with the
    RFC 5801 GS2 header, ``,`` and ``=`` of the username escaped)."""
    if mechanism == "XOAUTH2":
        return f"user={username}\x01auth=Bearer {token}\x01\x01".encode()
    if mechanism == "OAUTHBEARER":
        authzid = username.replace("=", "=3D").replace(",", "=2C")
        return f"n,a={authzid},\x01host={host}\x01port={port}\x01auth=Bearer {token}\x01\x01".encode()
    raise ValueError(f"not an OAuth2 mechanism: {mechanism}")


class SaslExchange:
    """The client's side of one SASL exchange, called with each server challenge (base64-decoded): sends
    the initial response on the server's first (empty) challenge; a later challenge is the server's error
    report (JSON), kept, and answered as the mechanism asks (XOAUTH2: empty; OAUTHBEARER: ``%x01``) so
    that the server ends with a refusal. None: abort the exchange (the protocol sends its cancel)."""

    def __init__(self, mechanism: str, initial: bytes) -> None:
        self._mechanism = mechanism
        self._initial: bytes | None = initial
        self._challenges = 0
        self.challenge: OAuthChallenge | None = None

    def __call__(self, data: bytes) -> bytes | None:
        if self._initial is not None:
            initial, self._initial = self._initial, None
            return initial
        self._challenges += 1
        if self._challenges > _MAX_CHALLENGES:
            return None
        self.challenge = self.challenge or OAuthChallenge.parse(data)
        return b"\x01" if self._mechanism == "OAUTHBEARER" else b""
