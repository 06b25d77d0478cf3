"""password_keyring through the keyring library, with real backends: a real Secret Service (GNOME
Keyring on a session bus of its own, tests/support/servers/secret_service.py) found as a desktop user's keychain
is found, and the backends that are no keychain (keyring's fail and null, every keyrings.alt backend,
PlaintextKeyring included) chosen through keyring's own configuration (``PYTHON_KEYRING_BACKEND``) or
left as keyring's only choice, to prove they are refused and never written."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import keyring
import keyring.backend
import keyring.core
import keyring.errors
import pytest
from keyring.backends.SecretService import Keyring as SecretServiceBackend
from secretstorage.exceptions import ItemNotFoundException

from mail_imap_mcp.config import ConfigError, load_config
from mail_imap_mcp.config.secret_storage import REFUSED_KEYCHAINS
from mail_imap_mcp.config.team import HttpAuthSettings
from mail_imap_mcp.credentials.keychain import (
    KeychainUnavailable,
    _backend,
    backend_name,
    delete_secret,
    find_secret,
    read_password,
    store_password,
)
from mail_imap_mcp.credentials.secret_service import GreetingKeyring
from mail_imap_mcp.credentials.secrets import account_password, introspection_secret
from mail_imap_mcp.credentials.sign_in_here import set_aside_sign_ins_without_keychain
from mail_imap_mcp.presentation.connect_failures import account_unusable
from tests.support.accounts import config_toml
from tests.support.servers.secret_service import SECRET_SERVICE_BACKEND, SecretService

NO_KEYCHAIN = "keyring.backends.fail.Keyring"
PLAINTEXT = "keyrings.alt.file.PlaintextKeyring"
CONFIG = """
[accounts.work]
host = "imap.example.com"
username = "me@example.com"
password_keyring = "mail-imap-mcp"
"""


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[dict[str, str]], None]]:
    """Puts keyring in the environment ``env`` (the variables it reads), none of the test run's own."""

    def use(env: dict[str, str]) -> None:
        for name in (
            "PYTHON_KEYRING_BACKEND",
            "DBUS_SESSION_BUS_ADDRESS",
            "XDG_DATA_HOME",
            "XDG_CONFIG_HOME",
        ):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        reload_keyring()

    yield use
    monkeypatch.undo()
    reload_keyring()


def reload_keyring() -> None:
    """keyring finds its backends once per process: find them again in the environment now."""
    vars(keyring.backend.get_all_keyring).pop("saved_result", None)
    keyring.core.init_backend()


def without_keychain(tmp_path: Path, backend: str | None = None) -> dict[str, str]:
    """A machine with no Secret Service (no session bus), ``backend`` chosen if given."""
    env = {
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    return env | ({"PYTHON_KEYRING_BACKEND": backend} if backend else {})


def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    return path


def test_keyrings_secret_service_backend_is_used_greeting_and_named_as_keyring_names_it(
    environment: Callable[[dict[str, str]], None], secret_service: SecretService
) -> None:
    """GNOME Keyring aborts when a new connection's first message reads a collection (issue 57's CI run):
    keyring's own Secret Service backend is used through the greeting one, and still named as keyring's;
    a subclass of someone's own is used as it is."""
    environment(secret_service.environment())
    keyring.set_keyring(SecretServiceBackend())
    assert type(_backend("password_keyring")) is GreetingKeyring
    assert backend_name() == SECRET_SERVICE_BACKEND
    glitching = GlitchingSecretService()
    keyring.set_keyring(glitching)
    assert _backend("password_keyring") is glitching


def test_a_stored_password_is_read_back_from_the_secret_service(
    environment: Callable[[dict[str, str]], None], secret_service: SecretService, tmp_path: Path
) -> None:
    environment(secret_service.environment())
    # keyrings.alt is installed beside it (keyring chains both): the Secret Service is the one used.
    assert backend_name() == SECRET_SERVICE_BACKEND
    assert store_password("mail-imap-mcp", "me@example.com", "s3cret-pw") == SECRET_SERVICE_BACKEND
    account = load_config(config_file(tmp_path), env={}).accounts["work"]
    assert account.password_source == "keyring:mail-imap-mcp"
    assert account_password(account) == "s3cret-pw"
    # GNOME Keyring keeps it in its login keyring (encrypted); keyrings.alt wrote no file of its own.
    assert (secret_service.home / ".local" / "share" / "keyrings" / "login.keyring").is_file()
    assert not (secret_service.home / ".local" / "share" / "python_keyring").exists()


def test_a_missing_entry_names_the_setting_service_and_backend(
    environment: Callable[[dict[str, str]], None], secret_service: SecretService, tmp_path: Path
) -> None:
    environment(secret_service.environment())
    account = load_config(config_file(tmp_path), env={}).accounts["work"]
    with pytest.raises(ConfigError) as caught:
        account_password(account)
    message = str(caught.value)
    assert message.startswith(f"password_keyring in [accounts.work]: the keychain ({SECRET_SERVICE_BACKEND})")
    assert "'mail-imap-mcp'" in message and "mail-imap-mcp setup" in message


@pytest.mark.parametrize(
    "refused",
    [
        NO_KEYCHAIN,
        "keyring.backends.null.Keyring",
        PLAINTEXT,
    ],
)
def test_regression_a_backend_that_is_no_keychain_is_refused_by_name_and_never_written(
    environment: Callable[[dict[str, str]], None], tmp_path: Path, refused: str
) -> None:
    """With keyrings.alt installed, setup called PlaintextKeyring's base64 file "the keychain"."""
    environment(without_keychain(tmp_path, refused))
    assert backend_name() == refused
    with pytest.raises(KeychainUnavailable) as caught:
        store_password("mail-imap-mcp", "me@example.com", "s3cret-pw")
    message = str(caught.value)
    assert message.startswith(f"password_keyring: no keychain here: keyring offers only {refused}, and ")
    assert REFUSED_KEYCHAINS in message and "PlaintextKeyring included" in message
    assert "password_file" in message and "s3cret-pw" not in message
    assert not list(tmp_path.rglob("*.cfg"))
    account = load_config(config_file(tmp_path), env={}).accounts["work"]
    with pytest.raises(
        KeychainUnavailable, match=r"^password_keyring in \[accounts.work\]: no keychain here"
    ):
        account_password(account)


def test_regression_keyrings_own_choice_of_a_plaintext_file_is_refused(
    environment: Callable[[dict[str, str]], None], tmp_path: Path
) -> None:
    """No Secret Service and no backend named: keyring itself picks keyrings.alt's PlaintextKeyring."""
    environment(without_keychain(tmp_path))
    assert keyring.get_keyring().__class__.__module__.startswith("keyrings.alt.")
    with pytest.raises(KeychainUnavailable, match=f"keyring offers only {PLAINTEXT}"):
        store_password("mail-imap-mcp", "me@example.com", "s3cret-pw")
    assert not list(tmp_path.rglob("*.cfg"))


def test_password_keyring_is_one_password_source_among_the_others(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG + 'password_env = "PW"\n')
    with pytest.raises(ConfigError, match="found: password_env, password_keyring"):
        load_config(path, env={})


def introspection(**secret: str) -> HttpAuthSettings:
    return HttpAuthSettings(
        issuer="https://sso.example.com",
        audience="https://mail-mcp.example.com/mcp",
        introspection_url="https://sso.example.com/introspect",
        client_id="mail-mcp",
        **secret,  # type: ignore[arg-type]
    )


def test_the_introspection_client_secret_comes_from_the_keychain(
    environment: Callable[[dict[str, str]], None], secret_service: SecretService, tmp_path: Path
) -> None:
    # The one OAuth secret the server itself holds: the client secret of [http.auth] introspection.
    environment(secret_service.environment())
    store_password("mail-imap-mcp", "mail-mcp", "client-s3cret")
    assert introspection_secret(introspection(client_secret_keyring="mail-imap-mcp")) == "client-s3cret"
    environment(without_keychain(tmp_path, NO_KEYCHAIN))
    with pytest.raises(KeychainUnavailable) as caught:
        introspection_secret(introspection(client_secret_keyring="mail-imap-mcp"))
    assert str(caught.value).startswith("client_secret_keyring in [http.auth]: no keychain here")
    with pytest.raises(
        ValueError, match="exactly one of client_secret_env, client_secret_file, client_secret_keyring"
    ):
        introspection(client_secret_keyring="mail-imap-mcp", client_secret_env="SECRET")


# What keyring raised in issue 57's flake: GNOME Keyring's ``default`` alias did not resolve for an instant
# while another client wrote, keyring asked for a new collection, and its prompt could not be shown.
COLLECTION_GLITCH = (
    "Failed to create the collection: Message recipient disconnected from message bus without replying.."
)


class GlitchingSecretService(GreetingKeyring):
    """The real Secret Service backend, whose next ``glitches`` look-ups of the collection fail as
    keyring's did in the flake (a real daemon's alias race is too rare to provoke in a test)."""

    priority = -1  # keyring knows every backend class: never its choice for the other tests
    glitches = 0
    glitch: Exception = keyring.errors.InitError(COLLECTION_GLITCH)

    def get_preferred_collection(self) -> Any:
        if self.glitches:
            self.glitches -= 1
            raise self.glitch
        return super().get_preferred_collection()


@pytest.fixture
def glitching(
    environment: Callable[[dict[str, str]], None], secret_service: SecretService
) -> GlitchingSecretService:
    environment(secret_service.environment())
    backend = GlitchingSecretService()
    keyring.set_keyring(backend)
    return backend


@pytest.mark.parametrize(
    "glitch",
    # keyring's InitError when the look-up failed; secretstorage's own when the collection left later in
    # the call (both seen in a stress of the daemon: tests/support/servers/secret_service.py).
    [keyring.errors.InitError(COLLECTION_GLITCH), ItemNotFoundException("Item does not exist!")],
)
def test_regression_a_collection_that_did_not_resolve_once_is_asked_again(
    glitching: GlitchingSecretService, glitch: Exception
) -> None:
    """Issue 57: one failed look-up of the default collection fails no keychain call."""
    glitching.glitch = glitch
    glitching.glitches = 1
    store_password("mail-imap-mcp", "me@example.com", "s3cret-pw")
    for call in (
        lambda: read_password("mail-imap-mcp", "me@example.com", "password_keyring"),
        lambda: find_secret("mail-imap-mcp", "me@example.com", "password_keyring"),
    ):
        glitching.glitches = 1
        assert call() == "s3cret-pw"
    glitching.glitches = 1
    delete_secret("mail-imap-mcp", "me@example.com", "password_keyring")
    assert find_secret("mail-imap-mcp", "me@example.com", "password_keyring") is None
    assert glitching.glitches == 0


def test_a_collection_that_never_resolves_is_a_clear_error_naming_the_setting(
    glitching: GlitchingSecretService,
) -> None:
    glitching.glitches = 2
    with pytest.raises(KeychainUnavailable) as caught:
        read_password("mail-imap-mcp", "me@example.com", "password_keyring in [accounts.work]")
    message = str(caught.value)
    assert message.startswith("password_keyring in [accounts.work]: the keychain failed (keyring backend ")
    assert COLLECTION_GLITCH.rstrip(".") in message and "unlock or start the keychain" in message
    assert glitching.glitches == 0


#: A Microsoft sign-in as a configuration file sets it.
SIGN_IN = {
    "host": "outlook.office365.com",
    "username": "me@contoso.example",
    "auth": "xoauth2",
    "oauth2_provider": "microsoft",
    "oauth2_client_id": "00000000-1111-2222-3333-444444444444",
}


@pytest.mark.parametrize("keychain", ["none here", "a Secret Service"])
def test_a_sign_in_kept_in_a_keychain_there_is_none_of_is_set_aside_at_start(
    environment: Callable[[dict[str, str]], None],
    tmp_path: Path,
    request: pytest.FixtureRequest,
    keychain: str,
) -> None:
    """Issue 78 item 8, for a configuration file's accounts (the bundle's form:
    tests/integration/sign_in/test_sign_in_no_keychain.py): the keychain's sign-in is not usable, named by its
    setting, where no keychain is; one kept in oauth2_token_file, and any where a keychain is, are."""
    if keychain == "none here":
        environment(without_keychain(tmp_path, NO_KEYCHAIN))
    else:
        environment(request.getfixturevalue("secret_service").environment())
    path = tmp_path / "config.toml"
    path.write_text(
        config_toml({"work": SIGN_IN, "filed": {**SIGN_IN, "oauth2_token_file": str(tmp_path / "t")}})
    )
    accounts = load_config(path, env={}).accounts
    set_aside_sign_ins_without_keychain(accounts)
    assert accounts["filed"].faults == ()
    if keychain != "none here":
        assert accounts["work"].faults == ()
        return
    (fault,) = accounts["work"].faults
    assert (fault.setting, fault.label) == ("oauth2_provider in [accounts.work]", None)
    failure = account_unusable("work", accounts["work"])
    assert failure.code == "auth_failed" and failure.retryable is False
    assert failure.message.startswith(
        "Account 'work' cannot be used as set up: oauth2_provider in [accounts.work] cannot sign in on this "
        f"computer, which has no usable keychain to keep the sign-in (no keychain here: keyring offers only "
        f"{NO_KEYCHAIN}, which keeps no secret safe): on a machine without a keychain, keep the sign-in in a "
        'file only you can read: set oauth2_token_file = "~/.config/mail-imap-mcp/work.token" in '
        "[accounts.work], then run login again (or start the system's keychain, e.g. GNOME Keyring). Correct "
        "it in the configuration file;"
    ), failure.message
