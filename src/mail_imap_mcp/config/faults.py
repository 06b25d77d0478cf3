"""An environment account's settings that cannot work, set aside so that the server still starts.

An MCP client that starts the server (Claude Desktop with the bundle's form, or a client's JSON with
``MAIL_IMAP_<ID>_*`` variables) shows only "connection closed" when it exits at start, and its log names
variables the user never saw. So a wrong password, host, port, security, address or certificate of an
environment account is a :class:`SettingFault`: the account is listed as not usable, and every call on
it is answered with the field and the variable to correct. A configuration file is still refused as a
whole (:func:`~mail_imap_mcp.config.loading.load_config`): its author reads the error at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .accounts import AccountConfig, AuthMethod, Security, is_loopback_host
from .env_names import ENV_PREFIX, ENV_SUFFIXES
from .errors import SettingFault
from .form import form_label
from .providers import PROVIDERS
from .recipients import AllowedRecipients, NotAnEntry
from .switches import WRITE_ENABLED, Switch

#: The host an account without one is validated with: ``.invalid`` never resolves (RFC 2606), and no
#: connection is tried for an account with a fault.
PLACEHOLDER_HOST = "host.invalid"
#: The server-wide write toggle's variable, which the bundle form's "Allow changes to mail" sets.
WRITE_ENABLED_ENV = str(WRITE_ENABLED.server_env)
#: Keys whose wrong value is a fault: the settings of the bundle's form (the username is required there).
_FAULT_KEYS = ("host", "port", "security", "password_env", "addresses", "ca_file", "oauth2_tenant")


def set_aside(prefix: str, account: Mapping[str, Any]) -> tuple[dict[str, Any], list[SettingFault]]:
    """``account`` (raw settings of ``MAIL_IMAP_<ID>_*``) with each wrong setting replaced by a placeholder
    or its default, and the faults found; what is still invalid is left for validation to refuse."""
    raw = dict(account)
    faults: list[SettingFault] = []

    def fault(key: str, reason: str, given: str | None = None) -> None:
        setting = prefix + ENV_SUFFIXES[key]
        faults.append(SettingFault(key, setting, form_label(setting), reason, given))

    if "host" not in raw:
        addresses = [*raw.get("addresses", []), str(raw.get("username", ""))]
        address = next((item for item in addresses if "@" in item), addresses[0])
        names = ", ".join(known.name.split(" (")[0] for known in PROVIDERS)
        fault(
            "host",
            f"is empty, and {address!r} is no address at a provider whose IMAP server this server knows "
            f"({names}): enter your IMAP server's host name",
        )
        raw["host"] = PLACEHOLDER_HOST
    if "port" in raw:
        port = str(raw["port"]).strip()
        if not (port.isdigit() and 1 <= int(port) <= 65535):
            fault("port", "is not a port number from 1 to 65535 (993 with TLS, 143 with STARTTLS)", port)
            del raw["port"]
    security = raw.get("security")
    if security is not None and security not in {member.value for member in Security}:
        fault("security", "is none of tls, starttls and plain", str(security))
        del raw["security"]
    elif security == Security.PLAIN and raw["host"] != PLACEHOLDER_HOST and not is_loopback_host(raw["host"]):
        fault(
            "security",
            "is plain, which sends the password unencrypted: only for a server on this computer; use tls "
            "or starttls",
            str(security),
        )
        del raw["security"]
    oauth2 = raw.get("auth") in {AuthMethod.XOAUTH2.value, AuthMethod.OAUTHBEARER.value}
    if not oauth2 and "password_env" not in raw:
        fault("password_env", "is empty: enter the password (or app password) of the account")
        raw["password_env"] = prefix + ENV_SUFFIXES["password_env"]
    elif oauth2 and "password_env" in raw:
        fault(
            "password_env", "is set, but the account signs in with its OAuth2 token command: leave it empty"
        )
        del raw["password_env"]
    ca_file = raw.get("ca_file")
    if ca_file is not None and not Path(str(ca_file)).expanduser().is_file():
        fault("ca_file", "names no file: choose the server's certificate (PEM)", str(ca_file))
        del raw["ca_file"]
    _sending_faults(raw, fault)
    try:
        AccountConfig.model_validate(raw)
    except ValidationError as exc:
        for error in exc.errors(include_url=False, include_input=False):
            key = str(error["loc"][0]) if error["loc"] else ""
            if key in _FAULT_KEYS and key in raw:
                value = raw.pop(key)
                given = (
                    None if key == "password_env" else ", ".join(value) if isinstance(value, list) else value
                )
                fault(key, str(error["msg"]).removeprefix("Value error, "), given)
        if "host" not in raw:
            raw["host"] = PLACEHOLDER_HOST
    return raw, faults


def _sending_faults(raw: dict[str, Any], fault: Callable[..., None]) -> None:
    """The settings of sending (the form's "Allow sending drafts", its recipients and SMTP server): a wrong
    one is its field's fault, and sending stays off."""
    smtp = dict(raw.get("smtp") or {})
    if "port" in smtp:
        port = str(smtp["port"]).strip()
        if not (port.isdigit() and 1 <= int(port) <= 65535):
            fault("smtp_port", "is not a port number from 1 to 65535 (465 with TLS, 587 with STARTTLS)", port)
            del smtp["port"]
    security = smtp.get("security")
    if security is not None and security not in {member.value for member in Security}:
        fault("smtp_security", "is none of tls, starttls and plain", str(security))
        del smtp["security"]
    elif security == Security.PLAIN and not is_loopback_host(str(smtp.get("host") or "")):
        fault(
            "smtp_security",
            "is plain, which sends the password unencrypted: only for a server on this computer named as "
            "SMTP server; use tls or starttls",
            str(security),
        )
        del smtp["security"]
    if smtp:
        raw["smtp"] = smtp
    else:
        raw.pop("smtp", None)
    entries = raw.get("allowed_recipients") or []
    try:
        AllowedRecipients.parse(entries)
    except NotAnEntry as exc:  # with sending off too: the list is read at start either way
        fault("allowed_recipients", str(exc), ", ".join(entries))
        raw["send_enabled"] = False
        del raw["allowed_recipients"]
        return
    if raw.get("send_enabled") is not True:
        return
    if not entries:
        fault(
            "allowed_recipients",
            "is empty, but sending is allowed: enter who may be sent mail (bob@example.org, @example.org for "
            "a domain, * for anyone)",
        )
        raw["send_enabled"] = False


def how_to_turn_on(account: AccountConfig, switch: Switch) -> tuple[str, dict[str, str]]:
    """How the user turns ``switch`` (an account switch with a server-wide variable) on for ``account``, in
    the words of where they set it (the bundle form's field by its label for an environment account), and
    ``{"field": label}`` for an error's details."""
    own = account.setting(switch.key, "true")
    if getattr(account, switch.key) is not None:
        return f"sets {own}", {}
    variable = switch.variable
    label = form_label(str(variable)) if own.startswith(ENV_PREFIX) else None
    if label is not None:
        return f'turns on "{label}" ({variable}=true), or sets {own} for this account only', {"field": label}
    return f"sets {switch.key} = true in [server] (or {variable}=true), or {own} for this account only", {}


def how_to_allow_writes(account: AccountConfig) -> tuple[str, dict[str, str]]:
    """How the user allows writes on ``account`` (:func:`how_to_turn_on`)."""
    return how_to_turn_on(account, WRITE_ENABLED)


def sending_without_writes(account: AccountConfig, writes_allowed: bool) -> SettingFault | None:
    """Sending on while writes are off (the form's "Allow sending drafts" without "Allow changes to
    mail"): no draft can be saved to send. Said at start and among the account's problems, in the words
    of where the user set it; the account stays usable (it reads, and sends a draft saved elsewhere)."""
    if not account.send_enabled or writes_allowed:
        return None
    how, _ = how_to_allow_writes(account)
    return SettingFault(
        "send_enabled",
        account.setting("send_enabled"),
        account.label("send_enabled"),
        f"is on, but writes are off, so no draft can be saved to send: the user {how}",
    )
