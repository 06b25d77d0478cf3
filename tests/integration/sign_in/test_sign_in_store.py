"""How a refresh token is kept in the keychain (credentials/token_keychain.py), in a real Secret Service: a token
over the Windows Credential Manager's limit of one credential is split over entries each within it (a
4 KB token under the Windows simulation, with that limit put on the keychain), and a crash at any step of
storing a rotated token leaves a complete one, so the sign-in survives it.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mail_imap_mcp.credentials.keychain import KeychainUnavailable, store_password
from mail_imap_mcp.credentials.token_keychain import KEYCHAIN_SERVICE, PARTS_SERVICE, KeychainRefreshTokens
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.oidc_provider import MAIL_SCOPE, PUBLIC_CLIENT, OidcProvider
from tests.support.servers.secret_service import SecretService
from tests.support.shared.sign_in_tokens import ACCOUNT, outcomes, refresh_refused, sign_in_account
from tests.support.shared.sign_in_tokens import keychain as keychain
from tests.support.shared.sign_in_tokens import refresh_token as refresh_token
from tests.support.shared.sign_in_tokens import user as user
from tests.support.windows_credentials import BACKEND, BLOB_LIMIT
from tests.support.windows_like import HIDE

ROOT = Path(__file__).resolve().parents[3]


def python_process(
    code: str, secret_service: SecretService, *, windows: bool = False, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a new Python (looking like Windows, with the Credential Manager's limit on the
    keychain, when ``windows``) that finds ``secret_service``, ``stdin`` its input; how it ended."""
    env = {**secret_service.environment(), "PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT)}
    if windows:
        env["PYTHON_KEYRING_BACKEND"] = BACKEND
    return subprocess.run(
        [sys.executable, "-c", (HIDE if windows else "") + textwrap.dedent(code)],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=patient(60),
        check=False,
    )


def run_python(code: str, secret_service: SecretService, *, windows: bool = False, stdin: str = "") -> str:
    """:func:`python_process`, which must exit 0; its stdout."""
    done = python_process(code, secret_service, windows=windows, stdin=stdin)
    assert done.returncode == 0, done.stderr
    return done.stdout


def crash_in(code: str, secret_service: SecretService, stdin: str = "") -> None:
    """Run ``code``, which must end the process by ``os._exit(3)`` (a crash at a chosen step)."""
    done = python_process(code, secret_service, stdin=stdin)
    assert done.returncode == 3, done.stderr


def test_a_4_kb_refresh_token_is_stored_in_parts_under_the_windows_simulation(
    secret_service: SecretService, keychain: KeychainRefreshTokens
) -> None:
    token = secrets.token_urlsafe(3072)  # 4,096 characters: 8 KB as the Credential Manager's UTF-16
    assert len(token) == 4096
    store = "from mail_imap_mcp.credentials.token_keychain import KeychainRefreshTokens as K\n"
    run_python(
        store + "import sys; K('work').save(sys.stdin.read())", secret_service, windows=True, stdin=token
    )
    read = run_python(
        store + "import hashlib; print(hashlib.sha256(K('work').load().encode()).hexdigest())",
        secret_service,
        windows=True,
    )
    assert read.strip() == hashlib.sha256(token.encode()).hexdigest()
    assert KeychainRefreshTokens("work").load() == token  # the same entries, read here
    assert len(token.encode("utf-16-le")) > BLOB_LIMIT  # as one entry, refused (the last test)


def test_the_two_slots_and_their_parts_are_all_forgotten(keychain: KeychainRefreshTokens) -> None:
    long_token, short_token = secrets.token_urlsafe(3000), secrets.token_urlsafe(32)
    keychain.save(long_token)
    keychain.save(short_token)  # the other slot; the long one's slot and parts are dropped
    assert keychain.load() == short_token
    assert find(PARTS_SERVICE, f"{ACCOUNT}/0") is None
    keychain.save(long_token)
    keychain.forget()
    assert keychain.load() is None
    assert [find(KEYCHAIN_SERVICE, user) for user in (ACCOUNT, f"{ACCOUNT}/b")] == [None, None]
    assert [find(PARTS_SERVICE, f"{ACCOUNT}/b/{n}") for n in range(4)] == [None] * 4


def find(service: str, user: str) -> str | None:
    from mail_imap_mcp.credentials.keychain import find_secret

    return find_secret(service, user, "test")


def test_a_crash_before_the_new_tokens_header_is_written_keeps_the_old_token(
    secret_service: SecretService, keychain: KeychainRefreshTokens
) -> None:
    """Each slot's header is written after its parts: a crash between leaves the parts of a token
    nothing points to, and the token before is the one read (both long: parts in both slots)."""
    old, new = secrets.token_urlsafe(3000), secrets.token_urlsafe(3000)
    keychain.save(old)
    crash_in(
        """
        import os, sys
        import mail_imap_mcp.credentials.token_keychain as store
        real = store.store_password
        def crash_at_the_header(service, user, secret, setting):
            if service == store.KEYCHAIN_SERVICE:
                os._exit(3)
            real(service, user, secret, setting)
        store.store_password = crash_at_the_header
        store.KeychainRefreshTokens("default").save(sys.stdin.read())
        """,
        secret_service,
        stdin=new,
    )
    assert find(PARTS_SERVICE, f"{ACCOUNT}/b/0") == new[:1000]  # the parts were written
    assert keychain.load() == old
    latest = secrets.token_urlsafe(2000)  # shorter: fewer parts than the leftovers in slot b
    keychain.save(latest)
    assert keychain.load() == latest


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.anyio
async def test_a_crash_after_the_rotated_token_is_stored_keeps_the_sign_in(
    oidc: OidcProvider,
    oidc_dovecot: Dovecot,
    user: str,
    secret_service: SecretService,
    keychain: KeychainRefreshTokens,
    refresh_token: str,
) -> None:
    """A refresh at the real provider rotates the token; the process dies after storing the new one,
    before dropping the old: the new one is read, the spent one is never presented again, and the
    account logs in."""
    metadata = oidc.metadata()
    crash_in(
        f"""
        import os
        from mail_imap_mcp.credentials.token_keychain import KeychainRefreshTokens
        from mail_imap_mcp.credentials.refresh import sign_in_fetcher
        from mail_imap_mcp.net.oauth import Endpoints, OAuthClient
        KeychainRefreshTokens._forget_slot = lambda self, slot: os._exit(3)
        client = OAuthClient(
            Endpoints({metadata["authorization_endpoint"]!r}, {metadata["token_endpoint"]!r}),
            {PUBLIC_CLIENT!r},
            ("openid", "offline_access", {MAIL_SCOPE!r}),
        )
        sign_in_fetcher(client, KeychainRefreshTokens({ACCOUNT!r}))(30.0)
        """,
        secret_service,
    )
    rotated = keychain.load()
    assert rotated is not None and rotated != refresh_token
    assert find(KEYCHAIN_SERVICE, ACCOUNT) is not None  # the old slot is still there
    (envelope,) = await outcomes(sign_in_account(oidc_dovecot, user, oidc))
    assert envelope["success"] is True, envelope
    assert refresh_refused(oidc, refresh_token)  # spent at the crash's refresh
    assert keychain.load() not in (None, refresh_token, rotated)  # the call's refresh rotated it again


def test_a_keychain_entry_over_the_limit_says_which_backend_refused(
    secret_service: SecretService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the store avoids: the limited backend refuses one oversized entry with a ConfigError naming
    the backend, never the secret."""
    import keyring

    from tests.support.windows_credentials import Keyring

    for name, value in secret_service.environment().items():
        monkeypatch.setenv(name, value)
    before = keyring.get_keyring()
    keyring.set_keyring(Keyring())
    try:
        secret = secrets.token_urlsafe(2000)
        with pytest.raises(KeychainUnavailable) as refused:
            store_password("probe", "work", secret, "the probe")
        assert "1783" in str(refused.value) and secret not in str(refused.value)
        KeychainRefreshTokens("work").save(secret)  # in parts: within the limit
        assert KeychainRefreshTokens("work").load() == secret
    finally:
        keyring.set_keyring(before)
