"""Account settings (``[accounts.<id>]`` or ``MAIL_IMAP_<ID>_*``), their names and secrets."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import ConfigDict, Field, PrivateAttr, SecretStr, field_validator, model_validator

from .endpoints import DEFAULT_PORTS as DEFAULT_PORTS
from .endpoints import Endpoint, SmtpSettings
from .endpoints import Security as Security
from .endpoints import is_loopback_host as is_loopback_host
from .env_names import ENV_SUFFIXES, SECURE_ENV_SUFFIX
from .errors import ConfigError as ConfigError
from .errors import SettingFault
from .errors import format_validation_error as format_validation_error
from .form import form_label
from .providers import Provider, provider_for, provider_for_address
from .recipients import AllowedRecipients, NotAnEntry, SendRate
from .rules_settings import RulesSettings
from .secrets import check_env_names
from .sign_in import SignInSettings

ACCOUNT_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
DEFAULT_CONFIG_PATH = Path("~/.config/mail-imap-mcp/config.toml")
_ADDRESS = re.compile(r"[^@\s<>,;\"]+@[^@\s<>,;\"]+")


class AuthMethod(StrEnum):
    """How an account logs in: LOGIN with a password, or SASL with an OAuth2 access token."""

    PASSWORD = "password"
    XOAUTH2 = "xoauth2"
    OAUTHBEARER = "oauthbearer"

    @property
    def mechanism(self) -> str:
        """The SASL mechanism name (``XOAUTH2``, ``OAUTHBEARER``); ``LOGIN`` for passwords."""
        return "LOGIN" if self is AuthMethod.PASSWORD else self.value.upper()


_PASSWORD_KEYS = ("password_env", "password_file", "password_command", "password_keyring", "password")


class AccountConfig(SignInSettings, RulesSettings):
    """One IMAP account (``[accounts.<account_id>]``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field(min_length=1, max_length=253, description="IMAP server host name or address.")
    port: int | None = Field(
        default=None, ge=1, le=65535, description="Port; default 993 for tls, 143 otherwise."
    )
    security: Security = Field(
        default=Security.TLS,
        description="tls (implicit TLS), starttls (upgrade required), or plain (loopback only).",
    )
    username: str = Field(min_length=1, description="Login name.")
    addresses: list[Annotated[str, Field(min_length=3, max_length=254)]] = Field(
        default_factory=list,
        max_length=50,
        description="Your own email addresses on this account, aliases included. Compact results show a "
        "recipient with one of them as 'me', and drafts are from the first. Default: the username, when "
        "it is an email address.",
    )
    auth: AuthMethod = Field(
        default=AuthMethod.PASSWORD,
        description="password (LOGIN with one of the password settings), or xoauth2 / oauthbearer "
        "(SASL with an OAuth2 access token from the built-in sign-in, oauth2_provider, or from "
        "oauth2_token_command; e.g. Gmail, Microsoft 365).",
    )
    oauth2_token_command: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Command (argv list) printing a current OAuth2 access token (e.g. from oauth2l, "
        "pizauth or mailctl); its token is shared by the account's connections for 5 minutes, and it "
        "runs once more when the server rejects the token.",
    )
    oauth2_token_timeout_s: float = Field(
        default=20.0,
        gt=0,
        le=300,
        description="How long oauth2_token_command may run (within the call's budget) before it is "
        "stopped and the login fails.",
    )
    password_env: str | None = Field(
        default=None, min_length=1, description="Name of an environment variable holding the password."
    )
    password_file: Path | None = Field(
        default=None,
        description="A file holding the password (its first line's newline trimmed); refused unless it is "
        "yours alone: mode 0600 or stricter and owned by you (on Windows, an access list granting you "
        "alone). Keeps the password out of an MCP client's config where the client cannot prompt.",
    )
    password_command: list[str] | None = Field(
        default=None, min_length=1, description="Command (argv list) whose stdout is the password."
    )
    password_keyring: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Read the password from the operating system's keychain (macOS Keychain, Windows "
        "Credential Locker, the Secret Service of GNOME Keyring or KWallet) through the keyring library: "
        "the entry of this service name and the username, as `mail-imap-mcp setup` stores it.",
    )
    helper_env: list[str] = Field(
        default_factory=list,
        description="Environment variables passed to password_command and oauth2_token_command besides "
        "PATH, HOME, USER, LOGNAME, locale, TZ, TMPDIR, XDG_RUNTIME_DIR and DBUS_SESSION_BUS_ADDRESS "
        '(e.g. ["GNUPGHOME", "PASSWORD_STORE_DIR"]); nothing else of the server\'s environment reaches '
        "them.",
    )
    password: SecretStr | None = Field(
        default=None, description="The password itself (discouraged; `check` warns)."
    )
    ca_file: Path | None = Field(
        default=None, description="Extra trust anchors (PEM) for a self-signed server certificate."
    )
    connect_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="Budget for TCP connect, TLS handshake and greeting. A whole call is bounded by "
        "connect_timeout_s + command_timeout_s.",
    )
    command_timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=600,
        description="Budget for each IMAP command (login included), within the call's overall budget.",
    )
    write_enabled: bool | None = Field(
        default=None,
        description="Allow write tools (flags, move, copy, delete, mailboxes, drafts) on this account; "
        "unset means [server] write_enabled.",
    )
    smtp: SmtpSettings = Field(
        default_factory=SmtpSettings,
        description="The SMTP submission server ([accounts.<account_id>.smtp]: host, port, security), "
        "where it is not the provider's; it logs in with this account's credentials. `check` and `setup` "
        "try it (connect, TLS or STARTTLS, the login), sending nothing.",
    )
    send_enabled: bool = Field(
        default=False,
        description="Allow sending mail from this account, each message approved by the user; off by "
        "default and never implied by write_enabled. Needs allowed_recipients, and writes allowed to save "
        "the drafts it sends (`setup` turns both on; `check` and the log at start say when writes are off).",
    )
    allowed_recipients: list[Annotated[str, Field(min_length=1, max_length=254)]] | None = Field(
        default=None,
        max_length=1000,
        description='Whom this account may send to (To, Cc and Bcc): addresses, domains ("@example.com": '
        'that domain exactly; "*.example.com": its subdomains only), or "*" written out for anyone. '
        "Compared case-folded and IDNA-normalised.",
    )
    send_rate_per_hour: SendRate = 20
    index: bool | None = Field(
        default=None,
        description="Keep a local full-text index of this account (docs/index.md); unset means [server] "
        "index.",
    )
    index_attachments: bool | None = Field(
        default=None,
        description="Also index the text of this account's document attachments (docs/index.md); unset "
        "means [server] index_attachments.",
    )
    index_meaning: bool | None = Field(
        default=None,
        description="Also keep vectors of this account's mail for search by meaning (docs/search.md); unset "
        "means [server] index_meaning.",
    )
    index_per_user: bool = Field(
        default=False,
        description="With users or per_user: keep a local index of each signed-in user's mailbox, one "
        "file per user, built on their first search and closed with their idle session. Off by default: "
        "every user's mail text then lands on the server's disk, readable by its operator "
        "(docs/index.md, team mode).",
    )
    trash_mailbox: str | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        description="Where deleted messages go when the server marks no mailbox as \\Trash.",
    )
    drafts_mailbox: str | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        description="Where drafts are saved when the server marks no mailbox as \\Drafts.",
    )
    sent_mailbox: str | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        description="Where your sent mail is kept when the server marks no mailbox as \\Sent (searched by "
        "needs_reply for your answers).",
    )

    users: list[Annotated[str, Field(min_length=1, max_length=254)]] | None = Field(
        default=None,
        max_length=1000,
        description="With [http.auth]: the users (as the token's user_claim names them) who may use this "
        "account, e.g. a shared mailbox for a few; nobody else sees it. Unset: a one-person server's "
        "account (stdio, the shared bearer token).",
    )
    per_user: bool = Field(
        default=False,
        description="With [http.auth]: a template serving each signed-in user their own mailbox: "
        "`{user}` in username, addresses and the arguments of password_command and "
        "oauth2_token_command is replaced by the user's name (e.g. a Dovecot master user, Google "
        "domain-wide delegation). With users set, only those users get it.",
    )

    authserv_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        pattern=r"^[A-Za-z0-9._-]+$",
        description="The authserv-id your provider's receiving server writes in Authentication-Results "
        "(e.g. mx.example.org): imap_get_message reports the sender's SPF/DKIM/DMARC results from that "
        "server's header only. Unset: the provider's for Gmail (mx.google.com) and Microsoft 365 (its "
        "header without an id); none elsewhere, as any header may have been written by the sender.",
    )

    @field_validator("helper_env")
    @classmethod
    def _helper_env_names(cls, names: list[str]) -> list[str]:
        return check_env_names(names)

    @field_validator("addresses")
    @classmethod
    def _addresses_are_addresses(cls, addresses: list[str]) -> list[str]:
        for address in addresses:
            if not _ADDRESS.fullmatch(address.strip()):
                raise ValueError(f"{address!r} is not an email address (name@domain)")
        return [address.strip() for address in addresses]

    @model_validator(mode="after")
    def _check(self) -> AccountConfig:
        sources = [name for name in _PASSWORD_KEYS if getattr(self, name) is not None]
        if self.auth is not AuthMethod.PASSWORD:
            if (self.oauth2_token_command is None) == (self.oauth2_provider is None):
                raise ValueError(
                    f"auth = '{self.auth.value}' needs either oauth2_provider (the built-in sign-in: "
                    "`mail-imap-mcp login`) or oauth2_token_command (a command printing an access token, "
                    'e.g. ["pizauth", "show", "work"]), not both'
                )
            if (problem := self.sign_in_problem(self.per_user)) is not None:
                raise ValueError(problem)
            if sources:
                raise ValueError(
                    f"auth = '{self.auth.value}' logs in with oauth2_token_command; remove "
                    f"{', '.join(sources)} (passwords are not used)"
                )
        elif self.oauth2_token_command is not None or self.oauth2_provider is not None:
            raise ValueError(
                "oauth2_token_command and oauth2_provider are only used with auth = 'xoauth2' or "
                "'oauthbearer'; set auth, or remove them"
            )
        elif len(sources) != 1:
            found = ", ".join(sources) if sources else "none"
            raise ValueError(
                "set exactly one of password_env, password_file, password_command, password_keyring, password "
                f"(found: {found})"
            )
        if self.security is Security.PLAIN and not is_loopback_host(self.host):
            raise ValueError(
                "security = 'plain' sends the password unencrypted and is only allowed for loopback "
                "hosts; use 'tls' or 'starttls'"
            )
        if self.per_user:
            filled = [self.username, *(self.password_command or []), *(self.oauth2_token_command or [])]
            if not any("{user}" in text for text in filled):
                raise ValueError(
                    "per_user = true serves each user their own mailbox: put {user} in username (e.g. "
                    '"{user}*master" for a Dovecot master user) or in an argument of password_command or '
                    "oauth2_token_command; otherwise every user would open the same mailbox"
                )
        if self.index_per_user and self.users is None and not self.per_user:
            raise ValueError(
                "index_per_user = true indexes the mailbox of each team user of an account served to them: "
                "set users or per_user (with [http.auth]), or keep an index with index = true"
            )
        if self.ca_file is not None and not self.ca_file.expanduser().is_file():
            raise ValueError("ca_file does not exist or is not a file")
        if self.allowed_recipients is not None:
            try:
                AllowedRecipients.parse(self.allowed_recipients)
            except NotAnEntry as refused:
                raise ValueError(f"allowed_recipients: {refused}") from None
        if self.send_enabled and self.allowed_recipients is None:
            raise ValueError(
                "send_enabled = true needs allowed_recipients: the addresses and domains mail may go to "
                '(e.g. ["@example.com", "bob@example.org"]), or ["*"] to allow anyone'
            )
        return self

    def for_user(self, user: str) -> AccountConfig:
        """This account as ``user`` logs in to it: a template's ``{user}`` substituted (a copy)."""
        if not self.per_user:
            return self

        def fill(text: str) -> str:
            return text.replace("{user}", user)

        changes: dict[str, Any] = {"username": fill(self.username)}
        changes["addresses"] = [fill(address) for address in self.addresses]
        for name in ("password_command", "oauth2_token_command"):
            command = getattr(self, name)
            if command is not None:
                changes[name] = [fill(arg) for arg in command]
        copy = self.model_copy(update=changes)
        copy._file_section, copy._env_prefix, copy._env_secure, copy._faults = (
            self._file_section,
            self._env_prefix,
            self._env_secure,
            self._faults,
        )
        return copy

    def serves(self, user: str) -> bool:
        """Whether ``user`` (empty: a one-person server's caller) may use this account."""
        if not user:
            return not self.per_user
        if self.users is not None:
            return user.casefold() in {listed.casefold() for listed in self.users}
        return self.per_user

    # Where the account came from, so messages name a setting the way the user wrote it.
    _file_section: str | None = PrivateAttr(default=None)
    _env_prefix: str | None = PrivateAttr(default=None)
    _env_secure: bool = PrivateAttr(default=False)
    # The settings of an environment account that cannot work (config/faults.py): none for a usable one.
    _faults: tuple[SettingFault, ...] = PrivateAttr(default=())

    @property
    def faults(self) -> tuple[SettingFault, ...]:
        """What is wrong with this account's settings; while there is anything, it is never connected."""
        return self._faults

    def add_fault(self, fault: SettingFault) -> None:
        """Set the account aside as not usable here (a fault found once the settings were read)."""
        self._faults = (*self._faults, fault)

    def setting(self, key: str, value: str | None = None) -> str:
        """How the user sets ``key`` for this account, optionally to ``value``.

        ``MAIL_IMAP_WORK_CA_FILE`` for an environment account, ``ca_file in [accounts.work]`` for a
        file account; ``security`` of an account configured with ``_SECURE`` is named as ``_SECURE``
        (``true`` for tls, ``false`` for starttls).
        """
        if self._env_prefix is not None:
            suffix = ENV_SUFFIXES.get(key, key.upper())
            if key == "security" and self._env_secure and value in {None, "tls", "starttls"}:
                suffix = SECURE_ENV_SUFFIX
                value = None if value is None else str(value == "tls").lower()
            name = self._env_prefix + suffix
            return name if value is None else f"{name}={value}"
        section = self._file_section
        for table in ("smtp", "sieve"):  # a key of the account's [accounts.<id>.smtp] or .sieve table
            if key.startswith(f"{table}_"):
                key, section = (
                    key.removeprefix(f"{table}_"),
                    None if section is None else f"{section}.{table}",
                )
        assignment = key if value is None else f"{key} = {toml_value(value)}"
        return assignment if section is None else f"{assignment} in [{section}]"

    def label(self, key: str) -> str | None:
        """The label of the bundle form's field that sets ``key`` for this account, where one does."""
        return form_label(self.setting(key))

    def named(self, key: str) -> str:
        """The setting ``key`` as its user knows it: the form's label and the variable (``"Password or app
        password" (MAIL_IMAP_DEFAULT_PASS)``) where the bundle's form sets it, else :meth:`setting`."""
        label = self.label(key)
        return self.setting(key) if label is None else f'"{label}" ({self.setting(key)})'

    @property
    def effective_addresses(self) -> list[str]:
        """``addresses``, else the username when it is an email address; drafts are from the first."""
        return self.addresses or ([self.username] if _ADDRESS.fullmatch(self.username) else [])

    @property
    def own_addresses(self) -> frozenset[str]:
        """The effective addresses lower-cased, to recognise this account among a message's recipients."""
        return frozenset(address.lower() for address in self.effective_addresses)

    @property
    def user_addresses(self) -> frozenset[str]:
        """:attr:`own_addresses` and the login name when it is an address, lower-cased: whose mail is the
        user's own (needs_reply leaves it out; a reply never goes to it)."""
        login = {self.username.lower()} if _ADDRESS.fullmatch(self.username) else set()
        return self.own_addresses | login

    @property
    def effective_port(self) -> int:
        return self.port if self.port is not None else DEFAULT_PORTS[self.security]

    @property
    def password_key(self) -> str:
        """The setting the login's secret comes from (``password_file``, ``oauth2_token_command``...)."""
        if self.auth is not AuthMethod.PASSWORD:
            return "oauth2_token_command"
        return next(key for key in _PASSWORD_KEYS if getattr(self, key) is not None)

    @property
    def imap(self) -> Endpoint:
        """The IMAP server (the flat host, port and security)."""
        return Endpoint(self.host, self.effective_port, self.security)

    @property
    def provider(self) -> Provider | None:
        """The known provider whose IMAP server this is, else whose domain the account's address is at."""
        return provider_for(self.host) or next(
            filter(None, map(provider_for_address, [*self.effective_addresses, self.username])), None
        )

    @property
    def submission(self) -> Endpoint | None:
        """The SMTP submission server: the smtp table over the provider's; None where neither names one."""
        provider = self.provider
        return self.smtp.endpoint(provider.submission_endpoint if provider else None)

    @property
    def recipients_allowed(self) -> AllowedRecipients:
        """Whom mail from this account may go to (nobody while allowed_recipients is unset)."""
        return AllowedRecipients.parse(self.allowed_recipients or [])

    @property
    def password_source(self) -> str:
        if self.auth is not AuthMethod.PASSWORD:
            return "oauth2_token_command"
        if self.password_env is not None:
            return f"env:{self.password_env}"
        if self.password_command is not None:
            return "command"
        if self.password_file is not None:
            return f"file:{self.password_file}"
        if self.password_keyring is not None:
            return f"keyring:{self.password_keyring}"
        return "inline"


def toml_value(value: str) -> str:
    return value if value.isdigit() or value in {"true", "false"} else f'"{value}"'
