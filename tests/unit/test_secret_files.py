"""password_file: a password read from a file that is its user's alone (mode 0600 or stricter, owned by
the current user; on Windows an access list granting the user alone), refused otherwise with the setting
and the fix named, never the password."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mail_imap_mcp.config import ConfigError, load_config
from mail_imap_mcp.config.secret_storage import (
    UnsafeSecretFile,
    is_refused_keychain,
    windows_acl_problem,
    write_secret_file,
)
from mail_imap_mcp.credentials.keychain import NO_KEYCHAIN_HINT
from mail_imap_mcp.credentials.secrets import account_password

PASSWORD = "s3cret-pw"
ME = "S-1-5-21-1-2-3-1001"


def account_with_password_file(tmp_path: Path, mode: int) -> tuple[Path, Path]:
    secret = tmp_path / "work.password"
    secret.write_text(PASSWORD + "\n")
    secret.chmod(mode)
    config = tmp_path / "config.toml"
    config.write_text(
        f'[accounts.work]\nhost = "imap.example.com"\nusername = "me"\npassword_file = "{secret}"\n'
    )
    return config, secret


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_a_password_file_of_the_user_alone_is_read(tmp_path: Path, mode: int) -> None:
    config, secret = account_with_password_file(tmp_path, mode)
    account = load_config(config, env={}).accounts["work"]
    assert account.password_source == f"file:{secret}"
    assert account_password(account) == PASSWORD


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620])
def test_a_password_file_open_to_others_is_refused_naming_the_setting_and_chmod(
    tmp_path: Path, mode: int
) -> None:
    config, secret = account_with_password_file(tmp_path, mode)
    account = load_config(config, env={}).accounts["work"]
    with pytest.raises(UnsafeSecretFile) as caught:
        account_password(account)
    message = str(caught.value)
    assert message.startswith(f"password_file in [accounts.work]: {secret} must be yours alone, but its mode")
    assert message.endswith(f"open to other users: chmod 600 {secret}")
    assert PASSWORD not in message


def test_a_password_file_of_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config, secret = account_with_password_file(tmp_path, 0o600)
    account = load_config(config, env={}).accounts["work"]
    owner = secret.stat().st_uid
    monkeypatch.setattr(os, "getuid", lambda: owner + 1)  # the file's owner is now someone else
    with pytest.raises(UnsafeSecretFile, match=f"it belongs to user id {owner}, not to you") as caught:
        account_password(account)
    assert "password_file in [accounts.work]" in str(caught.value)


def test_a_password_file_is_one_password_source_among_the_others(tmp_path: Path) -> None:
    config, _ = account_with_password_file(tmp_path, 0o600)
    config.write_text(config.read_text() + 'password_env = "PW"\n')
    with pytest.raises(ConfigError, match="found: password_env, password_file"):
        load_config(config, env={})


def test_a_missing_or_empty_password_file_names_the_setting(tmp_path: Path) -> None:
    config, secret = account_with_password_file(tmp_path, 0o600)
    account = load_config(config, env={}).accounts["work"]
    secret.write_text("\n")
    with pytest.raises(ConfigError, match=rf"^password_file in \[accounts.work\]: {secret} is empty$"):
        account_password(account)
    secret.unlink()
    with pytest.raises(ConfigError, match=r"^password_file in \[accounts.work\]: cannot read .*No such file"):
        account_password(account)


def test_a_written_secret_file_is_the_users_alone(tmp_path: Path) -> None:
    path = tmp_path / "new" / "work.password"
    write_secret_file(path, PASSWORD, "password_file")
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    assert path.read_text() == PASSWORD + "\n"
    with pytest.raises(FileExistsError):  # never over a file someone else may have put there
        write_secret_file(path, "other", "password_file")


@pytest.mark.parametrize(
    ("owner", "entries", "problem"),
    [
        (ME, [(ME, True)], None),
        (ME, [(ME, True), ("S-1-1-0", False)], None),  # a denial takes nothing away from the rule
        (ME, [], None),  # an empty list grants nobody, the owner may still change it
        ("S-1-5-32-544", [(ME, True)], "its owner is S-1-5-32-544, not you"),
        (ME, None, "it has no access list, so everyone may read it"),
        (ME, [(ME, True), ("S-1-5-18", True)], "its access list also grants S-1-5-18"),
        (
            ME,
            [(ME, True), ("S-1-1-0", True), ("S-1-5-11", True)],
            "its access list also grants S-1-1-0, S-1-5-11",
        ),
    ],
)
def test_a_windows_access_list_of_the_user_alone(
    owner: str, entries: list[tuple[str, bool]] | None, problem: str | None
) -> None:
    found = windows_acl_problem(owner, ME, entries)
    assert found == problem if problem is None else (found is not None and found.startswith(problem))


def test_the_refused_keychains_are_no_keychain_and_every_keyrings_alt_backend() -> None:
    for refused in (
        "keyring.backends.fail.Keyring",
        "keyring.backends.null.Keyring",
        "keyrings.alt.file.PlaintextKeyring",
        "keyrings.alt.file.EncryptedKeyring",
        "keyrings.alt.Windows.RegistryKeyring",
    ):
        assert is_refused_keychain(refused), refused
    for keychain in (
        "keyring.backends.SecretService.Keyring",
        "keyring.backends.macOS.Keyring",
        "keyring.backends.Windows.WinVaultKeyring",
        "keyring.backends.kwallet.DBusKeyring",
    ):
        assert not is_refused_keychain(keychain), keychain
    assert "password_file" in NO_KEYCHAIN_HINT
