"""Configuration loading: file + env accounts, validation messages that name the key, no secrets."""

from __future__ import annotations

from pathlib import Path

import pytest

from mail_imap_mcp.config import AuthMethod, ConfigError, Security, load_config
from mail_imap_mcp.credentials.secrets import account_password

ROOT = Path(__file__).parents[2]
#: The example a reader of the repository finds at its top level; the package ships a copy of it.
EXAMPLE = ROOT / "config.example.toml"
SHIPPED_EXAMPLE = ROOT / "src" / "mail_imap_mcp" / "config.example.toml"

GOOD = """
[accounts.work]
host = "imap.example.com"
username = "me@example.com"
password_env = "WORK_PW"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_minimal_account_gets_tls_and_port_993(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD), env={})
    work = config.accounts["work"]
    assert work.security is Security.TLS
    assert work.effective_port == 993
    assert config.server.write_enabled is False


def test_starttls_defaults_to_port_143(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD + 'security = "starttls"\n'), env={})
    assert config.accounts["work"].effective_port == 143


def test_config_path_from_env_variable(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    assert "work" in load_config(None, env={"MAIL_IMAP_MCP_CONFIG": str(path)}).accounts


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml", env={})


def test_unknown_key_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"accounts\.work\.pasword_env: unknown key"):
        load_config(
            write(tmp_path, GOOD.replace("password_env", "pasword_env") + 'password_env = "X"\n'), env={}
        )


def test_bad_port_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"accounts\.work\.port"):
        load_config(write(tmp_path, GOOD + "port = 70000\n"), env={})


def test_two_password_sources_are_refused(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match="exactly one of password_env, password_file, password_command, password"
    ):
        load_config(write(tmp_path, GOOD + 'password = "s3cret-value"\n'), env={})


def test_error_messages_never_echo_the_secret(tmp_path: Path) -> None:
    text = GOOD.replace('password_env = "WORK_PW"', 'password = "hunter2-secret"\nport = "not-a-port"')
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text), env={})
    assert "hunter2-secret" not in str(caught.value)


def test_plain_is_refused_off_loopback(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="only allowed for loopback"):
        load_config(write(tmp_path, GOOD + 'security = "plain"\n'), env={})


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_plain_is_allowed_on_loopback(tmp_path: Path, host: str) -> None:
    text = GOOD.replace("imap.example.com", host) + 'security = "plain"\n'
    assert load_config(write(tmp_path, text), env={}).accounts["work"].security is Security.PLAIN


def test_bad_account_id_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="must match"):
        load_config(write(tmp_path, GOOD.replace("accounts.work", 'accounts."my account"')), env={})


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "[accounts.work\n"), env={})


def test_env_only_account_compatible_with_the_seed_server() -> None:
    env = {
        "MAIL_IMAP_DEFAULT_HOST": "imap.example.com",
        "MAIL_IMAP_DEFAULT_USER": "me",
        "MAIL_IMAP_DEFAULT_PASS": "pw",
        "MAIL_IMAP_DEFAULT_PORT": "1993",
        "MAIL_IMAP_DEFAULT_SECURE": "true",
        "MAIL_IMAP_WRITE_ENABLED": "true",
        "HOME": "/nonexistent",
    }
    config = load_config(None, env)
    default = config.accounts["default"]
    assert (default.host, default.effective_port, default.security) == (
        "imap.example.com",
        1993,
        Security.TLS,
    )
    assert default.password_env == "MAIL_IMAP_DEFAULT_PASS"
    assert account_password(default, env) == "pw"
    assert config.server.write_enabled is True


def test_env_secure_false_means_starttls_not_plaintext() -> None:
    env = {
        "MAIL_IMAP_X_HOST": "h",
        "MAIL_IMAP_X_USER": "u",
        "MAIL_IMAP_X_PASS": "p",
        "MAIL_IMAP_X_SECURE": "false",
    }
    assert load_config(None, env).accounts["x"].security is Security.STARTTLS


def test_file_and_env_accounts_merge_and_clash_names_both(tmp_path: Path) -> None:
    env = {"MAIL_IMAP_HOME_HOST": "h", "MAIL_IMAP_HOME_USER": "u", "MAIL_IMAP_HOME_PASS": "p"}
    config = load_config(write(tmp_path, GOOD), env)
    assert sorted(config.accounts) == ["home", "work"]
    clash = {"MAIL_IMAP_WORK_HOST": "h", "MAIL_IMAP_WORK_USER": "u", "MAIL_IMAP_WORK_PASS": "p"}
    with pytest.raises(ConfigError, match=r"\[accounts\.work\].*MAIL_IMAP_WORK_HOST"):
        load_config(write(tmp_path, GOOD), clash)


def test_env_account_missing_user_names_the_variable() -> None:
    with pytest.raises(ConfigError, match=r"^MAIL_IMAP_X_USER is not set"):
        load_config(None, {"MAIL_IMAP_X_HOST": "h", "MAIL_IMAP_X_PASS": "p"})


ENV_ACCOUNT = {
    "MAIL_IMAP_DEFAULT_HOST": "imap.example.com",
    "MAIL_IMAP_DEFAULT_USER": "me@example.com",
    "HOME": "/nonexistent",
}


def test_regression_misspelt_pass_variable_is_named_with_the_right_one() -> None:
    # Issue 8: MAIL_IMAP_DEFAULT_PASSWORD gave "set exactly one of password_env, ..." and was never named.
    with pytest.raises(ConfigError) as caught:
        load_config(None, {**ENV_ACCOUNT, "MAIL_IMAP_DEFAULT_PASSWORD": "secret-value"})
    message = str(caught.value)
    assert message.startswith("MAIL_IMAP_DEFAULT_PASSWORD is not a setting of account 'default'")
    assert "did you mean MAIL_IMAP_DEFAULT_PASS?" in message
    assert "secret-value" not in message


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("MAIL_IMAP_DEFAULT_POTR", "MAIL_IMAP_DEFAULT_PORT"),
        ("MAIL_IMAP_DEFAULT_CAFILE", "MAIL_IMAP_DEFAULT_CA_FILE"),
        ("MAIL_IMAP_DEFAULT_OAUTH_TOKEN_COMMAND", "MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND"),
        ("MAIL_IMAP_DEFAULT_AUTHENTICATION", "MAIL_IMAP_DEFAULT_AUTH"),
    ],
)
def test_unknown_env_suffix_suggests_the_nearest_name(typo: str, meant: str) -> None:
    env = {**ENV_ACCOUNT, "MAIL_IMAP_DEFAULT_PASS": "p", typo: "x"}
    with pytest.raises(ConfigError, match=f"did you mean {meant}\\?"):
        load_config(None, env)


def test_env_variables_of_an_account_without_host_are_reported() -> None:
    # Served unusable, each setting to correct named (tests/pure/test_env_form.py): the host, the password.
    account = load_config(None, {"MAIL_IMAP_WORK_USER": "u", "HOME": "/nonexistent"}).accounts["work"]
    assert [fault.setting for fault in account.faults] == ["MAIL_IMAP_WORK_HOST", "MAIL_IMAP_WORK_PASS"]
    with pytest.raises(ConfigError, match="MAIL_IMAP_WORK_PASS is set but MAIL_IMAP_WORK_HOST is not"):
        load_config(None, {"MAIL_IMAP_WORK_PASS": "p", "HOME": "/nonexistent"})


def test_env_account_ids_with_underscores_own_their_variables() -> None:
    env = {
        **ENV_ACCOUNT,
        "MAIL_IMAP_DEFAULT_PASS": "p",
        "MAIL_IMAP_DEFAULT_WORK_HOST": "h2",
        "MAIL_IMAP_DEFAULT_WORK_USER": "u2",
        "MAIL_IMAP_DEFAULT_WORK_PASS": "p2",
    }
    assert sorted(load_config(None, env).accounts) == ["default", "default_work"]


def test_a_file_accounts_password_variable_may_look_like_an_env_account(tmp_path: Path) -> None:
    text = GOOD.replace('"WORK_PW"', '"MAIL_IMAP_WORK_PASSWORD"')
    config = load_config(write(tmp_path, text), {"MAIL_IMAP_WORK_PASSWORD": "p", "HOME": "/nonexistent"})
    assert list(config.accounts) == ["work"]


def test_invalid_env_value_names_the_variable() -> None:
    env = {**ENV_ACCOUNT, "MAIL_IMAP_DEFAULT_PASS": "p", "MAIL_IMAP_DEFAULT_PORT": "imaps"}
    (fault,) = load_config(None, env).accounts["default"].faults
    assert (fault.setting, fault.given) == ("MAIL_IMAP_DEFAULT_PORT", "imaps")
    with pytest.raises(ConfigError, match="MAIL_IMAP_DEFAULT_AUTH: Input should be 'password'"):
        load_config(None, {**env, "MAIL_IMAP_DEFAULT_AUTH": "kerberos"})


def test_env_addresses_are_comma_separated_and_a_wrong_one_names_the_variable() -> None:
    env = {
        **ENV_ACCOUNT,
        "MAIL_IMAP_DEFAULT_PASS": "p",
        "MAIL_IMAP_DEFAULT_ADDRESSES": " a@b.example, C@D.example,",
    }
    account = load_config(None, env).accounts["default"]
    assert account.effective_addresses == ["a@b.example", "C@D.example"]
    assert account.own_addresses == frozenset({"a@b.example", "c@d.example"})
    wrong = load_config(None, {**env, "MAIL_IMAP_DEFAULT_ADDRESSES": "a@b.example, Ana"}).accounts["default"]
    ((setting, reason),) = [(fault.setting, fault.reason) for fault in wrong.faults]
    assert (setting, reason) == ("MAIL_IMAP_DEFAULT_ADDRESSES", "'Ana' is not an email address (name@domain)")


def test_settings_are_named_as_the_user_wrote_them(tmp_path: Path) -> None:
    env_secure = load_config(
        None, {**ENV_ACCOUNT, "MAIL_IMAP_DEFAULT_PASS": "p", "MAIL_IMAP_DEFAULT_SECURE": "false"}
    )
    account = env_secure.accounts["default"]
    assert account.setting("ca_file") == "MAIL_IMAP_DEFAULT_CA_FILE"
    assert account.setting("security", "tls") == "MAIL_IMAP_DEFAULT_SECURE=true"
    assert account.setting("port", "993") == "MAIL_IMAP_DEFAULT_PORT=993"
    env_security = load_config(
        None, {**ENV_ACCOUNT, "MAIL_IMAP_DEFAULT_PASS": "p", "MAIL_IMAP_DEFAULT_SECURITY": "tls"}
    )
    assert (
        env_security.accounts["default"].setting("security", "starttls")
        == "MAIL_IMAP_DEFAULT_SECURITY=starttls"
    )
    work = load_config(write(tmp_path, GOOD), env={}).accounts["work"]
    assert work.setting("ca_file") == "ca_file in [accounts.work]"
    assert work.setting("security", "starttls") == 'security = "starttls" in [accounts.work]'
    assert work.setting("port", "143") == "port = 143 in [accounts.work]"


def test_no_accounts_explains_what_to_do_without_pointing_outside_the_package() -> None:
    # Issue 8: the message pointed to config.example.toml, which an installed package does not contain.
    with pytest.raises(ConfigError, match="no accounts configured") as caught:
        load_config(None, {"HOME": "/nonexistent"})
    assert "mail-imap-mcp config-example" in str(caught.value)
    assert "MAIL_IMAP_<ID>_HOST" in str(caught.value)


def test_password_command_is_run_and_trimmed(tmp_path: Path) -> None:
    text = GOOD.replace('password_env = "WORK_PW"', 'password_command = ["printf", "from-cmd\\\\n"]')
    account = load_config(write(tmp_path, text), env={}).accounts["work"]
    assert account_password(account) == "from-cmd"


def test_failing_password_command_reports_status_without_output(tmp_path: Path) -> None:
    text = GOOD.replace('password_env = "WORK_PW"', 'password_command = ["sh", "-c", "echo leaked; exit 3"]')
    account = load_config(write(tmp_path, text), env={}).accounts["work"]
    with pytest.raises(ConfigError, match="status 3") as caught:
        account_password(account)
    assert "leaked" not in str(caught.value)


def test_ca_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="ca_file"):
        load_config(write(tmp_path, GOOD + 'ca_file = "/nonexistent.pem"\n'), env={})


def test_regression_config_example_is_at_the_repository_root_and_the_package_ships_the_same_file() -> None:
    # Issue 20: the example lived only inside the package, not beside pyproject.toml where the design
    # card puts it. The root file is the one to edit; `mail-imap-mcp config-example` prints the copy.
    assert EXAMPLE.is_file() and not EXAMPLE.is_symlink()
    assert SHIPPED_EXAMPLE.read_bytes() == EXAMPLE.read_bytes(), (
        "config.example.toml changed: cp config.example.toml src/mail_imap_mcp/config.example.toml"
    )


def test_example_config_is_valid() -> None:
    config = load_config(EXAMPLE, env={})
    assert config.accounts


def test_example_config_documents_every_key() -> None:
    from mail_imap_mcp.config import AccountConfig, HttpSettings, ServerSettings

    text = EXAMPLE.read_text()
    for model in (AccountConfig, ServerSettings, HttpSettings):
        for name in model.model_fields:
            assert f"{name} =" in text or f"# {name} =" in text, f"config.example.toml lacks {name}"


# --- OAuth2 accounts (issue 14) ------------------------------------------------------------------

OAUTH = """
[accounts.work]
host = "outlook.office365.com"
username = "me@example.com"
auth = "xoauth2"
oauth2_token_command = ["pizauth", "show", "work"]
"""


def test_oauth2_account_loads_without_a_password(tmp_path: Path) -> None:
    work = load_config(write(tmp_path, OAUTH), env={}).accounts["work"]
    assert work.auth is AuthMethod.XOAUTH2 and work.auth.mechanism == "XOAUTH2"
    assert work.oauth2_token_command == ["pizauth", "show", "work"]
    assert work.password_source == "oauth2_token_command"
    assert work.oauth2_token_timeout_s == 20


def test_oauth2_needs_a_token_command(tmp_path: Path) -> None:
    text = OAUTH.replace('oauth2_token_command = ["pizauth", "show", "work"]\n', "")
    with pytest.raises(
        ConfigError,
        match=r"accounts\.work: auth = 'xoauth2' needs either oauth2_provider .* or oauth2_token_command",
    ):
        load_config(write(tmp_path, text), env={})


def test_oauth2_refuses_password_settings_and_names_them(tmp_path: Path) -> None:
    text = OAUTH + 'password = "secret-value"\npassword_env = "X"\n'
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text), env={})
    message = str(caught.value)
    assert "auth = 'xoauth2' logs in with oauth2_token_command; remove password_env, password" in message
    assert "secret-value" not in message


def test_a_token_command_without_oauth2_auth_is_refused(tmp_path: Path) -> None:
    text = GOOD + 'oauth2_token_command = ["pizauth", "show", "work"]\n'
    with pytest.raises(
        ConfigError, match="oauth2_token_command and oauth2_provider are only used with auth = 'xoauth2'"
    ):
        load_config(write(tmp_path, text), env={})


SIGN_IN = """
[accounts.work]
host = "outlook.office365.com"
username = "me@example.com"
auth = "xoauth2"
oauth2_provider = "microsoft"
oauth2_client_id = "client"
"""


def test_a_built_in_sign_in_account_loads_and_refuses_what_it_cannot_use(tmp_path: Path) -> None:
    work = load_config(write(tmp_path, SIGN_IN), env={}).accounts["work"]
    assert work.oauth2_provider == "microsoft" and work.oauth2_token_command is None
    for extra, said in (
        ('oauth2_token_command = ["pizauth", "show", "work"]\n', "either oauth2_provider .* not both"),
        ('password_env = "WORK_PW"\n', "remove password_env"),
        ('per_user = true\nusers = ["a"]\n', "keeps one person's sign-in: every user would get it"),
    ):
        with pytest.raises(ConfigError, match=said):
            load_config(write(tmp_path, SIGN_IN + extra), env={})
    with pytest.raises(ConfigError, match="oauth2_provider needs oauth2_client_id"):
        load_config(write(tmp_path, SIGN_IN.replace('oauth2_client_id = "client"\n', "")), env={})


def test_unknown_auth_value_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"accounts\.work\.auth: Input should be 'password', 'xoauth2'"):
        load_config(write(tmp_path, OAUTH.replace('"xoauth2"', '"oauth2"')), env={})


OAUTH_ENV = {**ENV_ACCOUNT, "MAIL_IMAP_DEFAULT_AUTH": "OAUTHBEARER"}


@pytest.mark.parametrize(
    ("value", "argv"),
    [
        ('["pizauth", "show", "my work"]', ["pizauth", "show", "my work"]),
        ("pizauth show 'my work'", ["pizauth", "show", "my work"]),
        ("  oauth2l fetch --output_format bare  ", ["oauth2l", "fetch", "--output_format", "bare"]),
    ],
)
def test_env_oauth2_account_takes_a_json_array_or_shell_words(value: str, argv: list[str]) -> None:
    env = {**OAUTH_ENV, "MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND": value}
    default = load_config(None, env).accounts["default"]
    assert default.auth is AuthMethod.OAUTHBEARER
    assert default.oauth2_token_command == argv
    assert default.setting("oauth2_token_command") == "MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND"
    assert default.setting("auth", "xoauth2") == "MAIL_IMAP_DEFAULT_AUTH=xoauth2"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('["pizauth", 3]', "MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND: not a JSON array of strings"),
        ('["pizauth", "show"', "MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND: not a JSON array of strings"),
        ("pizauth 'show", "MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND: cannot split into words"),
        # Blank is unset, as an MCP Bundle's empty form field is (tests/pure/test_env_form.py).
        ("   ", "^MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND is not set"),
        ("[]", "MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND: empty command"),
    ],
)
def test_env_token_command_errors_name_the_variable(value: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        load_config(None, {**OAUTH_ENV, "MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND": value})


def test_env_oauth2_account_needs_the_command_and_no_pass() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(None, OAUTH_ENV)
    assert str(caught.value) == (
        "MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND is not set: an environment account needs "
        "MAIL_IMAP_DEFAULT_HOST, MAIL_IMAP_DEFAULT_USER, MAIL_IMAP_DEFAULT_AUTH and "
        "MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND (or MAIL_IMAP_DEFAULT_OAUTH2_PROVIDER)"
    )
    env = {
        **OAUTH_ENV,
        "MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND": "pizauth show x",
        "MAIL_IMAP_DEFAULT_PASS": "pw",
    }
    (fault,) = load_config(None, env).accounts["default"].faults
    assert fault.setting == "MAIL_IMAP_DEFAULT_PASS" and "OAuth2 token command" in fault.reason
    env = {**ENV_ACCOUNT, "MAIL_IMAP_DEFAULT_PASS": "p", "MAIL_IMAP_DEFAULT_AUTH": "kerberos"}
    with pytest.raises(ConfigError, match="MAIL_IMAP_DEFAULT_AUTH: Input should be 'password'"):
        load_config(None, env)


@pytest.mark.parametrize("value", ["0", "-1", '"big"', "2147483648"])
def test_a_bad_max_send_bytes_is_a_config_error_naming_it(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match=r"server\.max_send_bytes"):
        load_config(write(tmp_path, GOOD + f"\n[server]\nmax_send_bytes = {value}\n"), env={})


def test_max_send_bytes_is_25_mib_unless_set(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, GOOD), env={}).server.max_send_bytes == 25 * 1024 * 1024
    given = GOOD + "\n[server]\nmax_send_bytes = 52428800\n"
    assert load_config(write(tmp_path, given), env={}).server.max_send_bytes == 50 * 1024 * 1024
