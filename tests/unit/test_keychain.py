"""password_keyring through the keyring library, with real backends chosen by keyring's own
configuration (``PYTHON_KEYRING_BACKEND``): a file-based keyring (keyrings.alt) for a keychain that
works, keyring's ``fail`` backend for a machine without one (headless Linux)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import keyring
import keyring.core
import pytest

from mail_imap_mcp.config import ConfigError, load_config
from mail_imap_mcp.config.keychain import KeychainUnavailable, backend_name, store_password
from mail_imap_mcp.config.team import HttpAuthSettings

FILE_BACKEND = "keyrings.alt.file.PlaintextKeyring"
NO_KEYCHAIN = "keyring.backends.fail.Keyring"
CONFIG = """
[accounts.work]
host = "imap.example.com"
username = "me@example.com"
password_keyring = "mail-imap-mcp"
"""


@pytest.fixture
def backend(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Callable[[str], None]]:
    """Selects keyring's backend the way a user would: the environment variable keyring reads."""

    def select(name: str) -> None:
        monkeypatch.setenv("PYTHON_KEYRING_BACKEND", name)
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
        keyring.core.init_backend()

    yield select
    monkeypatch.undo()
    keyring.core.init_backend()


def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    return path


def test_a_stored_password_is_read_back_from_the_keychain(
    backend: Callable[[str], None], tmp_path: Path
) -> None:
    backend(FILE_BACKEND)
    assert store_password("mail-imap-mcp", "me@example.com", "s3cret-pw") == FILE_BACKEND
    account = load_config(config_file(tmp_path), env={}).accounts["work"]
    assert account.password_source == "keyring:mail-imap-mcp"
    assert account.resolve_password() == "s3cret-pw"
    # The file backend keeps it in its own file under XDG_DATA_HOME, nowhere else.
    assert (tmp_path / "data" / "python_keyring" / "keyring_pass.cfg").is_file()


def test_a_missing_entry_names_the_setting_service_and_backend(
    backend: Callable[[str], None], tmp_path: Path
) -> None:
    backend(FILE_BACKEND)
    account = load_config(config_file(tmp_path), env={}).accounts["work"]
    with pytest.raises(ConfigError) as caught:
        account.resolve_password()
    message = str(caught.value)
    assert message.startswith("password_keyring in [accounts.work]: the keychain (keyrings.alt.file.")
    assert "'mail-imap-mcp'" in message and "mail-imap-mcp setup" in message


def test_no_keychain_is_a_clear_error_naming_the_backend(
    backend: Callable[[str], None], tmp_path: Path
) -> None:
    backend(NO_KEYCHAIN)
    assert backend_name() == NO_KEYCHAIN
    account = load_config(config_file(tmp_path), env={}).accounts["work"]
    with pytest.raises(KeychainUnavailable) as caught:
        account.resolve_password()
    message = str(caught.value)
    assert message.startswith(
        f"password_keyring in [accounts.work]: the keychain failed (keyring backend {NO_KEYCHAIN}: "
    )
    assert "password_command or password_env" in message
    with pytest.raises(KeychainUnavailable, match=NO_KEYCHAIN):
        store_password("mail-imap-mcp", "me@example.com", "pw")


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


def test_the_introspection_client_secret_comes_from_the_keychain(backend: Callable[[str], None]) -> None:
    # The one OAuth secret the server itself holds: the client secret of [http.auth] introspection.
    backend(FILE_BACKEND)
    store_password("mail-imap-mcp", "mail-mcp", "client-s3cret")
    assert introspection(client_secret_keyring="mail-imap-mcp").resolve_client_secret() == "client-s3cret"
    backend(NO_KEYCHAIN)
    with pytest.raises(KeychainUnavailable) as caught:
        introspection(client_secret_keyring="mail-imap-mcp").resolve_client_secret()
    assert str(caught.value).startswith("client_secret_keyring in [http.auth]: the keychain failed")
    with pytest.raises(
        ValueError, match="exactly one of client_secret_env, client_secret_file, client_secret_keyring"
    ):
        introspection(client_secret_keyring="mail-imap-mcp", client_secret_env="SECRET")
