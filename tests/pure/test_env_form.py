"""Environment accounts as an MCP Bundle's form fills them: an empty field is unset, the host and port come
from the provider table when the address is at a known provider, a token command means OAuth2."""

from __future__ import annotations

from pathlib import Path

import pytest

from mail_imap_mcp.config import AuthMethod, ConfigError, Security, load_config
from mail_imap_mcp.config.endpoints import Endpoint
from mail_imap_mcp.config.faults import sending_without_writes
from mail_imap_mcp.config.providers import PROVIDERS, Provider, provider_for_address
from mail_imap_mcp.config.sign_in import SignInProvider
from mail_imap_mcp.credentials.secrets import account_password
from tests.support.shared.env_form import FORM


def test_an_address_at_a_known_provider_fills_host_port_security_and_username() -> None:
    account = load_config(None, FORM).accounts["default"]
    assert (account.host, account.effective_port, account.security) == ("imap.gmail.com", 993, Security.TLS)
    assert account.username == "you@gmail.com"
    assert account.effective_addresses == ["you@gmail.com"]
    assert account_password(account, FORM) == "app-password"


def test_what_the_form_says_wins_over_the_provider_table() -> None:
    env = {**FORM, "MAIL_IMAP_DEFAULT_HOST": "imap.example.org", "MAIL_IMAP_DEFAULT_PORT": "1143"}
    env |= {"MAIL_IMAP_DEFAULT_SECURITY": "starttls", "MAIL_IMAP_DEFAULT_USER": "login-name"}
    account = load_config(None, env).accounts["default"]
    assert (account.host, account.effective_port, account.security) == (
        "imap.example.org",
        1143,
        Security.STARTTLS,
    )
    assert account.username == "login-name"


def test_a_proton_address_gets_the_bridge_on_loopback_with_starttls() -> None:
    account = load_config(None, {**FORM, "MAIL_IMAP_DEFAULT_ADDRESSES": "me@proton.me"}).accounts["default"]
    assert (account.host, account.effective_port, account.security) == ("127.0.0.1", 1143, Security.STARTTLS)


def test_an_unsubstituted_form_field_counts_as_unset() -> None:
    # Claude Desktop passes ${user_config.x} as it is for a field without value or default (mcpb issue 250).
    env = {**FORM, "MAIL_IMAP_DEFAULT_HOST": "${user_config.imap_host}"}
    assert load_config(None, env).accounts["default"].host == "imap.gmail.com"


def fault_of(env: dict[str, str]) -> tuple[str, str | None, str]:
    """The one fault of the form's account: its setting, the form's label of it, and why."""
    account = load_config(None, env).accounts["default"]
    ((setting, label, reason),) = [(fault.setting, fault.label, fault.reason) for fault in account.faults]
    return setting, label, reason


def test_regression_an_own_domain_without_a_server_is_the_host_fields_fault_not_a_refusal() -> None:
    # Issue 47 item 6: the server exited at start, and Claude Desktop said only "connection closed".
    env = {**FORM, "MAIL_IMAP_DEFAULT_ADDRESSES": "you@example.org"}
    setting, label, reason = fault_of(env)
    assert (setting, label) == ("MAIL_IMAP_DEFAULT_HOST", "IMAP server (optional)")
    assert "'you@example.org' is no address at a provider" in reason and "host name" in reason
    account = load_config(None, env).accounts["default"]
    assert account.host == "host.invalid" and account.username == "you@example.org"
    assert "app-password" not in repr(account.faults)


@pytest.mark.parametrize("password", ["", "   ", "${user_config.password}"])
def test_regression_an_empty_password_is_the_password_fields_fault_not_a_refusal(password: str) -> None:
    setting, label, reason = fault_of({**FORM, "MAIL_IMAP_DEFAULT_PASS": password})
    assert (setting, label) == ("MAIL_IMAP_DEFAULT_PASS", "Password or app password")
    assert reason.startswith("is empty")


@pytest.mark.parametrize("port", ["imaps", "0", "65536", "99x", "-993"])
def test_regression_a_port_that_is_no_number_from_1_to_65535_is_the_port_fields_fault(port: str) -> None:
    setting, label, reason = fault_of({**FORM, "MAIL_IMAP_DEFAULT_PORT": port})
    assert (setting, label) == ("MAIL_IMAP_DEFAULT_PORT", "IMAP port (optional)")
    assert "1 to 65535" in reason
    assert load_config(None, {**FORM, "MAIL_IMAP_DEFAULT_PORT": " 1143 "}).accounts["default"].port == 1143


@pytest.mark.parametrize("security", ["ssl", "SSL/TLS", "yes"])
def test_regression_an_unknown_security_is_the_security_fields_fault(security: str) -> None:
    setting, label, reason = fault_of({**FORM, "MAIL_IMAP_DEFAULT_SECURITY": security})
    assert (setting, label) == ("MAIL_IMAP_DEFAULT_SECURITY", "Connection security (optional)")
    assert reason == "is none of tls, starttls and plain"
    assert (
        load_config(None, {**FORM, "MAIL_IMAP_DEFAULT_SECURITY": "ssl"}).accounts["default"].faults[0].given
        == "ssl"
    )


def test_plain_security_to_a_remote_server_is_the_security_fields_fault() -> None:
    env = {**FORM, "MAIL_IMAP_DEFAULT_HOST": "imap.example.org", "MAIL_IMAP_DEFAULT_SECURITY": "plain"}
    setting, _, reason = fault_of(env)
    assert setting == "MAIL_IMAP_DEFAULT_SECURITY" and "only for a server on this computer" in reason
    local = {**env, "MAIL_IMAP_DEFAULT_HOST": "127.0.0.1"}
    assert load_config(None, local).accounts["default"].faults == ()


def test_a_missing_certificate_file_and_a_wrong_address_are_faults_of_their_fields(tmp_path: Path) -> None:
    setting, label, _ = fault_of({**FORM, "MAIL_IMAP_DEFAULT_CA_FILE": str(tmp_path / "missing.pem")})
    assert (setting, label) == ("MAIL_IMAP_DEFAULT_CA_FILE", "Server certificate (optional)")
    env = {**FORM, "MAIL_IMAP_DEFAULT_HOST": "imap.example.org", "MAIL_IMAP_DEFAULT_ADDRESSES": "Ana"}
    setting, label, reason = fault_of({**env, "MAIL_IMAP_DEFAULT_USER": "ana"})
    assert (setting, label, reason) == (
        "MAIL_IMAP_DEFAULT_ADDRESSES",
        "Email address",
        "'Ana' is not an email address (name@domain)",
    )


def test_a_password_beside_a_token_command_is_the_password_fields_fault() -> None:
    env = {**FORM, "MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND": "pizauth show gmail"}
    setting, _, reason = fault_of(env)
    assert setting == "MAIL_IMAP_DEFAULT_PASS" and "OAuth2 token command" in reason


def test_every_fault_of_an_account_is_kept_host_first() -> None:
    env = {**FORM, "MAIL_IMAP_DEFAULT_ADDRESSES": "you@example.org", "MAIL_IMAP_DEFAULT_PASS": ""}
    env |= {"MAIL_IMAP_DEFAULT_PORT": "imaps", "MAIL_IMAP_DEFAULT_SECURITY": "ssl"}
    faults = load_config(None, env).accounts["default"].faults
    assert [fault.key for fault in faults] == ["host", "port", "security", "password_env"]


def test_another_environment_account_is_named_by_its_variable_alone() -> None:
    env = {"MAIL_IMAP_WORK_HOST": "imap.example.org", "MAIL_IMAP_WORK_USER": "me", "MAIL_IMAP_WORK_PORT": "x"}
    account = load_config(None, {**env, "MAIL_IMAP_WORK_PASS": "p", "HOME": "/nonexistent"}).accounts["work"]
    ((fault,),) = [account.faults]
    assert (fault.setting, fault.label, fault.named) == ("MAIL_IMAP_WORK_PORT", None, "MAIL_IMAP_WORK_PORT")


def test_a_config_files_wrong_setting_is_still_refused_as_a_whole(tmp_path: Path) -> None:
    # The file's author reads the error when the server starts: only environment accounts are served
    # with a fault.
    path = tmp_path / "config.toml"
    path.write_text('[accounts.work]\nhost = "h"\nusername = "u"\npassword_env = "P"\nport = 70000\n')
    with pytest.raises(
        ConfigError, match=r"accounts\.work\.port: Input should be less than or equal to 65535"
    ):
        load_config(path, {"HOME": "/nonexistent"})
    path.write_text('[accounts.work]\nhost = "h"\nusername = "u"\n')
    with pytest.raises(ConfigError, match="set exactly one of password_env"):
        load_config(path, {"HOME": "/nonexistent"})


def test_the_forms_labels_are_the_manifests_titles() -> None:
    from mail_imap_mcp.config.form import BUNDLE_FORM, form_label

    for variable, field in BUNDLE_FORM.values():
        assert form_label(variable) == field["title"]
    assert form_label("MAIL_IMAP_WORK_PASS") is None


def test_a_token_command_logs_in_with_xoauth2_without_a_password() -> None:
    env = {
        **FORM,
        "MAIL_IMAP_DEFAULT_PASS": "",
        "MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND": "pizauth show gmail",
    }
    account = load_config(None, env).accounts["default"]
    assert account.auth is AuthMethod.XOAUTH2
    assert account.oauth2_token_command == ["pizauth", "show", "gmail"]


def test_sign_in_with_microsoft_needs_only_the_address_and_the_client_id() -> None:
    env = {
        **FORM,
        "MAIL_IMAP_DEFAULT_ADDRESSES": "you@outlook.com",
        "MAIL_IMAP_DEFAULT_PASS": "",
        "MAIL_IMAP_DEFAULT_OAUTH2_PROVIDER": "Microsoft",
        "MAIL_IMAP_DEFAULT_OAUTH2_CLIENT_ID": " 00000000-1111-2222-3333-444444444444 ",
    }
    account = load_config(None, env).accounts["default"]
    assert (account.oauth2_provider, account.auth) == (SignInProvider.MICROSOFT, AuthMethod.XOAUTH2)
    assert account.oauth2_client_id == "00000000-1111-2222-3333-444444444444"
    assert account.host == "outlook.office365.com" and account.oauth2_token_command is None
    assert account.oauth2_client_secret_env is None and account.oauth2_tenant == "common"


MICROSOFT_FORM = {
    **FORM,
    "MAIL_IMAP_DEFAULT_ADDRESSES": "you@contoso.onmicrosoft.com",
    "MAIL_IMAP_DEFAULT_HOST": "outlook.office365.com",
    "MAIL_IMAP_DEFAULT_PASS": "",
    "MAIL_IMAP_DEFAULT_OAUTH2_PROVIDER": "microsoft",
    "MAIL_IMAP_DEFAULT_OAUTH2_CLIENT_ID": "00000000-1111-2222-3333-444444444444",
}


def test_regression_the_forms_microsoft_tenant_reaches_the_sign_in() -> None:
    """Issue 56 item 8: the form had no tenant, so an Entra app of one organisation (Entra's default
    registration) could not sign in from the bundle: ``common`` is refused there (AADSTS50194)."""
    from mail_imap_mcp.config.form import BUNDLE_FORM
    from mail_imap_mcp.credentials.oauth_client import preset_endpoints

    (field,) = [
        field for variable, field in BUNDLE_FORM.values() if variable == "MAIL_IMAP_DEFAULT_OAUTH2_TENANT"
    ]
    assert field["title"] == "Microsoft tenant (optional)" and field["default"] == ""
    tenant = "contoso.onmicrosoft.com"
    account = load_config(None, {**MICROSOFT_FORM, "MAIL_IMAP_DEFAULT_OAUTH2_TENANT": tenant}).accounts[
        "default"
    ]
    assert account.oauth2_tenant == tenant and account.faults == ()
    preset = preset_endpoints(account)
    assert preset is not None
    assert preset.authorization == f"https://login.microsoftonline.com/{tenant}/oauth2/v2.0/authorize"
    empty = load_config(None, {**MICROSOFT_FORM, "MAIL_IMAP_DEFAULT_OAUTH2_TENANT": ""}).accounts["default"]
    assert empty.oauth2_tenant == "common"


TENANT_IN_WORDS = (
    "is not a tenant: give your organisation's tenant ID or domain (letters, digits, dots and hyphens only, "
    "e.g. contoso.onmicrosoft.com), or common, organizations or consumers"
)


def test_a_tenant_that_is_none_is_the_tenant_fields_fault_said_in_words() -> None:
    # Issue 78: the reason an agent relays was the pattern it failed ("String should match pattern ...").
    setting, label, reason = fault_of({**MICROSOFT_FORM, "MAIL_IMAP_DEFAULT_OAUTH2_TENANT": "my company"})
    assert (setting, label) == ("MAIL_IMAP_DEFAULT_OAUTH2_TENANT", "Microsoft tenant (optional)")
    assert reason == TENANT_IN_WORDS


def test_a_tenant_that_is_none_in_a_config_file_is_refused_in_words(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[accounts.work]\nhost = "outlook.office365.com"\nusername = "you@contoso.onmicrosoft.com"\n'
        'auth = "xoauth2"\noauth2_provider = "microsoft"\noauth2_client_id = "client"\n'
        'oauth2_tenant = "contoso/onmicrosoft"\n'
    )
    with pytest.raises(ConfigError) as refused:
        load_config(path, {})
    assert f"oauth2_tenant: {TENANT_IN_WORDS}" in str(refused.value)
    assert "pattern" not in str(refused.value) and "[A-Za-z" not in str(refused.value)


def test_sign_in_with_google_takes_the_client_secret_by_its_variables_name() -> None:
    env = {
        **FORM,
        "MAIL_IMAP_DEFAULT_PASS": "",
        "MAIL_IMAP_DEFAULT_OAUTH2_PROVIDER": "google",
        "MAIL_IMAP_DEFAULT_OAUTH2_CLIENT_ID": "123-abc.apps.googleusercontent.com",
        "MAIL_IMAP_DEFAULT_OAUTH2_CLIENT_SECRET": "GOCSPX-a-secret",
    }
    config = load_config(None, env)
    account = config.accounts["default"]
    assert account.oauth2_provider is SignInProvider.GOOGLE
    assert account.oauth2_client_secret_env == "MAIL_IMAP_DEFAULT_OAUTH2_CLIENT_SECRET"
    assert "GOCSPX-a-secret" not in config.model_dump_json()


def test_sign_in_left_empty_keeps_the_password() -> None:
    account = load_config(None, {**FORM, "MAIL_IMAP_DEFAULT_OAUTH2_PROVIDER": ""}).accounts["default"]
    assert account.oauth2_provider is None and account.auth is AuthMethod.PASSWORD


def test_sign_in_without_a_client_id_is_refused_naming_it() -> None:
    env = {**FORM, "MAIL_IMAP_DEFAULT_PASS": "", "MAIL_IMAP_DEFAULT_OAUTH2_PROVIDER": "microsoft"}
    with pytest.raises(ConfigError, match="oauth2_client_id"):
        load_config(None, env)


def test_sign_in_with_an_unknown_provider_is_refused_naming_the_variable() -> None:
    env = {**FORM, "MAIL_IMAP_DEFAULT_PASS": "", "MAIL_IMAP_DEFAULT_OAUTH2_PROVIDER": "yahoo"}
    with pytest.raises(ConfigError, match="MAIL_IMAP_DEFAULT_OAUTH2_PROVIDER"):
        load_config(None, env)


def test_writes_follow_the_forms_toggle() -> None:
    assert load_config(None, FORM).server.write_enabled is False
    assert load_config(None, {**FORM, "MAIL_IMAP_WRITE_ENABLED": "true"}).server.write_enabled is True
    assert load_config(None, {**FORM, "MAIL_IMAP_WRITE_ENABLED": ""}).server.write_enabled is False


def test_sending_follows_the_forms_toggle_and_recipients() -> None:
    account = load_config(None, FORM).accounts["default"]
    assert account.send_enabled is False and account.faults == ()
    env = {**FORM, "MAIL_IMAP_DEFAULT_SEND_ENABLED": "true"}
    account = load_config(
        None, {**env, "MAIL_IMAP_DEFAULT_ALLOWED_RECIPIENTS": "bob@example.org, @example.com"}
    )
    assert account.accounts["default"].send_enabled is True
    allowed = account.accounts["default"].recipients_allowed
    assert allowed.allows("x@example.com") and not allowed.allows("eve@elsewhere.example")
    assert account.accounts["default"].submission == Endpoint("smtp.gmail.com", 465, Security.TLS)


def test_rules_follow_the_forms_toggle_and_a_refusal_names_it() -> None:
    """Issue 91 on the bundle's path: "Allow rules on your mail server" sets the form account's
    rules_enabled (off when unticked or empty), and the rules' refusal names the field as its user saw it."""
    from mail_imap_mcp.capabilities import RULES

    env = {
        **FORM,
        "MAIL_IMAP_DEFAULT_ADDRESSES": "you@example.org",
        "MAIL_IMAP_DEFAULT_HOST": "imap.example.org",
    }
    assert load_config(None, env).accounts["default"].rules_enabled is False
    assert (
        load_config(None, {**env, "MAIL_IMAP_DEFAULT_RULES_ENABLED": ""}).accounts["default"].rules_enabled
        is False
    )
    config = load_config(None, {**env, "MAIL_IMAP_DEFAULT_RULES_ENABLED": "true"})
    assert config.accounts["default"].rules_enabled is True and RULES.permits(config, "default") is None
    refusal = RULES.permits(load_config(None, env), "default")
    assert refusal is not None and refusal.field == "Allow rules on your mail server"
    assert '"Allow rules on your mail server" (MAIL_IMAP_DEFAULT_RULES_ENABLED)' in refusal.message


@pytest.mark.parametrize(
    ("fields", "variable", "label", "words"),
    [
        ({"SEND_ENABLED": "true"}, "ALLOWED_RECIPIENTS", "Who may be sent mail", "is empty, but sending"),
        ({"SEND_ENABLED": "true", "ALLOWED_RECIPIENTS": "bob"}, "ALLOWED_RECIPIENTS", "Who may be sent mail",
         "'bob' is not an allowed recipient"),
        ({"ALLOWED_RECIPIENTS": "@"}, "ALLOWED_RECIPIENTS", "Who may be sent mail", "'@' is not an allowed"),
        ({"SMTP_PORT": "smtps"}, "SMTP_PORT", "SMTP port (optional)", "1 to 65535"),
        ({"SMTP_SECURITY": "ssl"}, "SMTP_SECURITY", "SMTP security (optional)", "none of tls"),
        ({"SMTP_HOST": "smtp.example.org", "SMTP_SECURITY": "plain"}, "SMTP_SECURITY",
         "SMTP security (optional)", "only for a server on this computer"),
    ],
)  # fmt: skip
def test_regression_a_wrong_sending_field_is_its_fault_and_sending_stays_off(
    fields: dict[str, str], variable: str, label: str, words: str
) -> None:
    """Like every field of the form (issue 47), a wrong sending field keeps the server up and names itself."""
    env = {**FORM, **{f"MAIL_IMAP_DEFAULT_{key}": value for key, value in fields.items()}}
    setting, shown, reason = fault_of(env)
    assert (setting, shown) == (f"MAIL_IMAP_DEFAULT_{variable}", label) and words in reason
    assert load_config(None, env).accounts["default"].send_enabled is False


def test_regression_sending_on_without_an_smtp_server_leaves_the_account_usable() -> None:
    """Issue 56 item 9: the SMTP server missing for an own domain made the whole account unusable; now
    reading works and the send itself names the field (tests/integration/bundle/test_bundle.py)."""
    env = {
        **FORM,
        "MAIL_IMAP_DEFAULT_HOST": "imap.example.org",
        "MAIL_IMAP_DEFAULT_ADDRESSES": "you@example.org",
    }
    env |= {"MAIL_IMAP_DEFAULT_SEND_ENABLED": "true", "MAIL_IMAP_DEFAULT_ALLOWED_RECIPIENTS": "*"}
    account = load_config(None, env).accounts["default"]
    assert account.faults == () and account.send_enabled is True and account.submission is None
    assert account.named("smtp_host") == '"SMTP server (optional)" (MAIL_IMAP_DEFAULT_SMTP_HOST)'


def test_empty_variables_of_no_account_configure_nothing() -> None:
    # Every field of the form left empty: no account, and the error says how to configure one.
    empty = {name: "" for name in FORM if name.startswith("MAIL_IMAP_")}
    with pytest.raises(ConfigError, match="no accounts configured"):
        load_config(None, {**empty, "HOME": "/nonexistent"})


@pytest.mark.parametrize("provider", PROVIDERS, ids=lambda provider: provider.name)
def test_every_providers_domains_lead_back_to_it(provider: Provider) -> None:
    for domain in provider.domains:
        assert provider_for_address(f"someone@{domain.upper()}") is provider


def test_no_provider_for_a_lookalike_domain_or_no_address() -> None:
    assert provider_for_address("you@evilgmail.com") is None
    assert provider_for_address("gmail.com") is None
    assert provider_for_address("") is None


@pytest.mark.anyio
async def test_the_listing_says_an_unusable_account_first_and_offers_no_call_on_it() -> None:
    from mcp import Client

    from mail_imap_mcp.server import build_server
    from tests.support.clients.envelope_client import EnvelopeClient

    env = {**FORM, "MAIL_IMAP_DEFAULT_PORT": "imaps"}
    env |= {
        "MAIL_IMAP_WORK_HOST": "imap.example.org",
        "MAIL_IMAP_WORK_USER": "me",
        "MAIL_IMAP_WORK_PASS": "p",
    }
    async with Client(build_server(load_config(None, env))) as client:
        envelope = await EnvelopeClient(client).call("imap_list_accounts")
    assert envelope["summary"] == (
        "2 account(s) configured; not usable until a setting is corrected (problems): default"
    )
    default, work = envelope["data"]["accounts"]
    assert (default["usable"], default["port"], work["usable"]) == (False, 0, True)
    assert default["problems"][0]["field"] == "IMAP port (optional)"
    assert envelope["data"]["next_action"]["arguments"] == {"account_id": "work"}


def test_the_unsubscribe_field_turns_on_unsubscribe_enabled_and_is_off_when_empty_or_absent() -> None:
    assert load_config(None, FORM).server.unsubscribe_enabled is False
    assert (
        load_config(None, {**FORM, "MAIL_IMAP_UNSUBSCRIBE_ENABLED": ""}).server.unsubscribe_enabled is False
    )
    assert (
        load_config(None, {**FORM, "MAIL_IMAP_UNSUBSCRIBE_ENABLED": "false"}).server.unsubscribe_enabled
        is False
    )
    on = load_config(None, {**FORM, "MAIL_IMAP_UNSUBSCRIBE_ENABLED": "true"})
    assert on.server.unsubscribe_enabled is True and "unsubscribe" not in on.accounts


@pytest.mark.parametrize("variable", ["MAIL_IMAP_INDEX", "MAIL_IMAP_INDEX_MEANING"])
def test_the_index_switches_are_read_from_the_environment_as_the_other_switches_are(variable: str) -> None:
    """Issue 80: the form's "Keep a local index" sets MAIL_IMAP_INDEX ([server] index), which search by
    meaning needs; empty (an untouched field) leaves the file's or the default setting."""
    key = variable.removeprefix("MAIL_IMAP_").lower()
    default = getattr(load_config(None, FORM).server, key)
    assert getattr(load_config(None, {**FORM, variable: ""}).server, key) is default
    for value, expected in (("true", True), ("Yes", True), ("1", True), ("false", False), ("off", False)):
        assert getattr(load_config(None, {**FORM, variable: value}).server, key) is expected
    assert key not in load_config(None, {**FORM, variable: "true"}).accounts


def test_the_forms_local_index_turns_the_index_on_and_an_account_may_set_its_own() -> None:
    assert not load_config(None, FORM).indexed("default")
    on = load_config(None, {**FORM, "MAIL_IMAP_INDEX": "true"})
    assert on.server.index is True and on.indexed("default")
    own = load_config(None, {**FORM, "MAIL_IMAP_INDEX": "true", "MAIL_IMAP_DEFAULT_INDEX": "false"})
    assert own.accounts["default"].index is False and not own.indexed("default")
    assert load_config(None, {**FORM, "MAIL_IMAP_DEFAULT_INDEX": "on"}).indexed("default")


def test_regression_sending_on_with_writes_off_is_said_in_the_forms_words() -> None:
    """Issue 78 item 7: "Allow sending drafts" on without "Allow changes to mail" left an account whose send
    tool had nothing to send, and nothing said so; now it is the account's problem (it still reads)."""
    env = {**FORM, "MAIL_IMAP_DEFAULT_SEND_ENABLED": "true", "MAIL_IMAP_DEFAULT_ALLOWED_RECIPIENTS": "*"}
    config = load_config(None, env)
    account = config.accounts["default"]
    problem = sending_without_writes(account, config.writes_allowed("default"))
    assert account.faults == () and problem is not None
    assert problem.named == '"Allow sending drafts" (MAIL_IMAP_DEFAULT_SEND_ENABLED)'
    assert problem.reason == (
        'is on, but writes are off, so no draft can be saved to send: the user turns on "Allow changes to '
        'mail" (MAIL_IMAP_WRITE_ENABLED=true), or sets MAIL_IMAP_DEFAULT_WRITE_ENABLED=true for this account '
        "only"
    )
    allowed = load_config(None, {**env, "MAIL_IMAP_WRITE_ENABLED": "true"})
    assert sending_without_writes(allowed.accounts["default"], allowed.writes_allowed("default")) is None
