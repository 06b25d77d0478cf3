"""The built-in sign-in started by a call (issue 48 item 5): a call on an account that needs its user to
sign in (``auth_failed`` with ``details.reason`` ``sign_in_required``) starts a sign-in attempt for that
account, whose loopback redirect listener (:mod:`mail_imap_mcp.net.loopback_redirect`) waits in the
background; the envelope layer takes the user to its page (URL elicitation, else the browser, through
:class:`~mail_imap_mcp.envelope.user_page.UserPage`). The provider's redirect ends the attempt: the code
is redeemed and, once the account's IMAP server took the new token for the account's username (the
check the server hands in: :data:`NewSignInCheck`), the refresh token stored as ``mail-imap-mcp login``
stores it, so the next call works.

One attempt per account runs at a time, for :data:`~mail_imap_mcp.net.browser.ATTEMPT_S` at most; a
call meanwhile offers the same page. Only a server on the user's own machine (stdio) starts attempts: over
HTTP any caller could sign the account in to their own mailbox.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping

from mail_imap_mcp.config import AccountConfig, ConfigError
from mail_imap_mcp.envelope.model import ErrorCode, FailureEnvelope
from mail_imap_mcp.net.browser import ATTEMPT_S, BrowserOpener
from mail_imap_mcp.net.oauth import (
    OAuthClient,
    TokenResponse,
    authorization_request,
    code_from_redirect,
    id_token_problem,
    redeem_code,
    revoke,
    signed_in_as,
)
from mail_imap_mcp.net.tokens import AccessToken, TokenSource, TokenUnavailable

from .oauth_client import oauth_client
from .refresh import RefreshTokenStore
from .sign_in_state import keep_sign_in, refresh_token_store
from .tokens import FixedToken

log = logging.getLogger("mail_imap_mcp.sign_in")

SIGNED_IN = "signed in"
#: Where the user of a sign-in a call started goes back to (a bundle user has no terminal).
CONVERSATION = "your conversation with the assistant, and ask again"
#: How long the token endpoint is given to redeem the code.
REDEEM_S = 30.0
#: Why a new sign-in of an account must not be kept (its mail server refused the account's username
#: with the new access token, handed as a token source of that token alone), or None:
#: :func:`mail_imap_mcp.imap.token_check.new_sign_in_refusal`.
NewSignInCheck = Callable[[str, AccountConfig, TokenSource], str | None]


def check_new_sign_in(
    answer: TokenResponse, client: OAuthClient, nonce: str | None, server: Callable[[AccessToken], str | None]
) -> None:
    """Nothing when the new sign-in ``answer`` may be kept: its ID token, if any, checks out
    (:func:`~mail_imap_mcp.net.oauth.id_token_problem`, ``nonce`` the request's) and ``server`` (the
    account's mail server) logs the account's username in with its access token. Otherwise
    :class:`TokenUnavailable` saying why, its refresh token revoked first where the provider offers it."""
    problem = id_token_problem(answer, client, nonce)
    refused = f"the provider's answer was not kept: {problem}" if problem else server(answer.access)
    if refused is None:
        return
    if answer.refresh_token:
        with contextlib.suppress(TokenUnavailable):
            revoke(client, answer.refresh_token)
    raise TokenUnavailable(refused)


class SignInAttempt:
    """One account's sign-in in the background: a :class:`~mail_imap_mcp.envelope.user_page.UserPage`."""

    def __init__(
        self,
        account_id: str,
        client: OAuthClient,
        opener: BrowserOpener,
        check: Callable[[AccessToken], str | None],
        attempt_s: float = ATTEMPT_S,
        store: RefreshTokenStore | None = None,
    ) -> None:
        self.account_id = account_id
        self._check = check
        self._store = store
        self._client = client
        self._opener = opener
        from mail_imap_mcp.net.loopback_redirect import (
            RedirectListener,  # an HTTP server: loaded by a sign-in
        )

        self._listener = RedirectListener(back_to=CONVERSATION)
        self._request = authorization_request(client, self._listener.redirect_uri)
        self._listener.expect(self._request.url, self._request.state)
        #: What the user's browser is given: where peers are checked, an address that holds no secret.
        self.url = self._listener.opening_url
        self.elicitation_id = f"sign-in-{secrets.token_urlsafe(12)}"
        self.message = (
            f"Sign in to the mail account {account_id!r} (mail-imap-mcp): the page asks for your "
            "account's permission to read its mail over IMAP."
        )
        self.opened_note = "The page was opened in the user's browser just now."
        self.offered_message = (
            f"Account {account_id!r} needs its user to sign in, on the sign-in page open to them (no "
            "command to run): once they have signed in there, call again."
        )
        self.offered_instruction = (
            "After the user has signed in on the page, list the account's mailboxes again"
        )
        self._opened = False
        #: None while it runs; then :data:`SIGNED_IN` or why it ended without.
        self.outcome: str | None = None
        self._done = threading.Event()
        self._stop = threading.Event()
        self._deadline = time.monotonic() + attempt_s
        threading.Thread(target=self._run, name=f"sign-in-{account_id}", daemon=True).start()

    @property
    def running(self) -> bool:
        return not self._done.is_set()

    def finished(self, timeout_s: float) -> bool:
        # Once the browser came back, what is left is the server's (the code redeemed, the token
        # stored): awaited whatever ``timeout_s``, so the call the user makes next finds it done.
        if self._listener.received is not None:
            timeout_s = max(timeout_s, REDEEM_S + 5)
        return self._done.wait(timeout_s) and self.outcome == SIGNED_IN

    def open_browser(self) -> bool:
        opened = self._opener.open_for_user(self.url, self.account_id)
        self._opened = self._opened or opened
        return opened

    @property
    def open_to_user(self) -> bool:
        return self._opened and self.running

    def stop(self) -> None:
        """End the attempt (the server is closing): its listener closes within a second."""
        self._stop.set()

    def _run(self) -> None:
        try:
            self.outcome = self._sign_in()
        except TokenUnavailable as exc:
            self.outcome = exc.reason
        except Exception as exc:  # a thread's failure must still end the attempt
            log.exception("sign-in of account %r failed", self.account_id)
            self.outcome = f"the sign-in failed ({type(exc).__name__})"
        finally:
            self._listener.__exit__(None, None, None)
            self._opener.attempt_ended(self.account_id)
            self._done.set()
        log.info("sign-in attempt of account %r ended: %s", self.account_id, self.outcome)

    def _sign_in(self) -> str:
        redirect = None
        while redirect is None and not self._stop.is_set():
            left = self._deadline - time.monotonic()
            if left <= 0:
                return "no answer from the browser in time"
            redirect = self._listener.wait(min(left, 1.0))
        if redirect is None:
            return "the server stopped"
        code = code_from_redirect(self._request, redirect)
        answer = redeem_code(self._client, self._request, code, REDEEM_S)
        if not answer.refresh_token:
            return "the provider gave no refresh token (offline access was not granted)"
        check_new_sign_in(answer, self._client, self._request.nonce, self._check)
        keep_sign_in(self.account_id, answer.refresh_token, signed_in_as(answer), self._store)
        return SIGNED_IN


class SignInAttempts:
    """The sign-in attempts of a server's accounts (``accounts``: those of its own configuration)."""

    def __init__(
        self,
        accounts: Mapping[str, AccountConfig],
        opener: BrowserOpener,
        attempt_s: float = ATTEMPT_S,
        *,
        check: NewSignInCheck,
    ) -> None:
        self._accounts = accounts
        self._check = check
        self.opener = opener
        self._attempt_s = attempt_s
        self._attempts: dict[str, SignInAttempt] = {}
        self._lock = threading.Lock()

    def page_for(self, failure: FailureEnvelope) -> SignInAttempt | None:
        """The running sign-in of the account ``failure`` says needs one (started now if none runs), or
        None for any other failure or when the provider cannot be asked."""
        details = failure.error.details
        if failure.error.code != ErrorCode.AUTH_FAILED or details.get("reason") != "sign_in_required":
            return None
        account_id = details.get("account_id")
        account = self._accounts.get(account_id) if isinstance(account_id, str) else None
        if account is None or account.oauth2_provider is None or account.per_user:
            return None
        assert isinstance(account_id, str)
        with self._lock:
            attempt = self._attempts.get(account_id)
            if attempt is not None and attempt.running:
                return attempt
            try:
                store = refresh_token_store(account_id, account)
                client = oauth_client(account)
                attempt = SignInAttempt(
                    account_id,
                    client,
                    self.opener,
                    lambda token: self._check(account_id, account, FixedToken(token)),
                    self._attempt_s,
                    store,
                )
            except (TokenUnavailable, ConfigError, OSError) as exc:
                log.info("no sign-in attempt for account %r: %s", account_id, type(exc).__name__)
                return None
            self._attempts[account_id] = attempt
            return attempt

    def close(self) -> None:
        with self._lock:
            for attempt in self._attempts.values():
                attempt.stop()
