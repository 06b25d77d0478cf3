"""The built-in sign-in's settings (``oauth2_provider`` and its companions), the providers' presets, and
where a signed-in account's refresh token is kept: the OS keychain (:mod:`.sign_in_store`), never the
configuration file.

The presets are written from Microsoft's and Google's documentation and have not been checked against
their live services (docs/providers.md); each endpoint can be overridden, and ``custom`` takes an
``oauth2_issuer`` whose metadata names the endpoints (RFC 8414 / OpenID Connect discovery).
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from mail_imap_mcp.net.oauth import Endpoints, OAuthClient, discover

from .secrets import resolve_secret
from .sign_in_store import KEYCHAIN_SERVICE as KEYCHAIN_SERVICE
from .sign_in_store import KeychainRefreshTokens as KeychainRefreshTokens

#: The offline_access scope makes Microsoft issue a refresh token.
_MICROSOFT_SCOPES = ("https://outlook.office.com/IMAP.AccessAsUser.All", "offline_access")
#: Sending over Microsoft's SMTP submission takes a scope of its own, of the same resource as the IMAP
#: one (one token serves both); asked only of an account that sends (send_enabled), since consent to it
#: lets the application send as the user.
_MICROSOFT_SEND_SCOPE = "https://outlook.office.com/SMTP.Send"
_GOOGLE_SCOPES = ("https://mail.google.com/",)
#: An application's own token asks for the permissions an admin granted it (IMAP.AccessAsApp).
_MICROSOFT_APP_SCOPES = ("https://outlook.office365.com/.default",)
#: Microsoft's tenants of many organisations, which an application's own sign-in cannot use.
_SHARED_TENANTS = frozenset({"common", "organizations", "consumers"})


class SignInProvider(StrEnum):
    MICROSOFT = "microsoft"
    GOOGLE = "google"
    CUSTOM = "custom"


class SignInSettings(BaseModel):
    """The account settings of the built-in sign-in (part of :class:`~.accounts.AccountConfig`)."""

    oauth2_provider: SignInProvider | None = Field(
        default=None,
        description="Sign in from the server itself (`mail-imap-mcp login <account>`) instead of an "
        "oauth2_token_command: microsoft, google, or custom (oauth2_issuer, or the oauth2_*_url "
        "settings). Needs auth = xoauth2 or oauthbearer and oauth2_client_id; the refresh token is kept "
        "in the OS keychain (or oauth2_token_file).",
    )
    oauth2_client_id: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        default=None,
        description="The OAuth client ID you or your organisation registered (docs/providers.md).",
    )
    oauth2_client_secret_env: str | None = Field(
        default=None,
        min_length=1,
        description="google: the environment variable holding the client secret Google issues for a "
        "desktop app (kept like a password; Microsoft's public clients have none).",
    )
    oauth2_client_secret_file: Path | None = Field(
        default=None, description="google: a file of yours alone (mode 0600) holding that client secret."
    )
    oauth2_tenant: str = Field(
        default="common",
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9.-]+$",
        description="microsoft: common, organizations, consumers, or your tenant's ID or domain.",
    )
    oauth2_issuer: str | None = Field(
        default=None,
        min_length=1,
        description="custom: the issuer URL whose metadata names the endpoints.",
    )
    oauth2_scopes: list[str] | None = Field(
        default=None, description="The scopes to ask for; default: the provider's IMAP scope."
    )
    oauth2_authorization_url: str | None = Field(
        default=None, description="Override the provider's authorization endpoint."
    )
    oauth2_token_url: str | None = Field(default=None, description="Override the provider's token endpoint.")
    oauth2_device_url: str | None = Field(
        default=None, description="Override the provider's device authorization endpoint."
    )
    oauth2_revocation_url: str | None = Field(
        default=None, description="Override the provider's revocation endpoint."
    )
    oauth2_client_credentials: bool = Field(
        default=False,
        description="Organisations: sign in as the application itself (the client credentials grant of "
        "your organisation's app registration, with its secret), no user signing in: with per_user and "
        'username = "{user}", each team user opens their own mailbox among those an admin allowed the '
        "app (docs/team.md). microsoft (a tenant's id or domain) or custom.",
    )
    oauth2_token_file: Path | None = Field(
        default=None,
        description="Keep the refresh token in this file instead of the OS keychain, for a machine "
        "without one: written mode 0600 (a Windows access list of you alone), replaced whole on each "
        "rotation, refused when others can read it; logout deletes it.",
    )
    oauth2_redirect_port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        description="login: the loopback port the browser is sent back to, for a provider that needs "
        "the exact redirect URI registered (http://127.0.0.1:<port>/callback); default: a free port the "
        "system gives, which Microsoft and Google accept.",
    )

    def sign_in_problem(self, per_user: bool = False) -> str | None:
        """What is missing for the built-in sign-in, or wrong beside it (``per_user``: the account is a
        template for many users), if anything."""
        if self.oauth2_provider is None:
            return None
        if self.oauth2_client_credentials:
            return self._client_credentials_problem()
        if per_user:
            return (
                "per_user = true serves each user their own mailbox, but the built-in sign-in "
                "(oauth2_provider) keeps one person's sign-in: every user would get it; use "
                "oauth2_token_command with {user} instead"
            )
        if self.oauth2_client_id is None:
            return "oauth2_provider needs oauth2_client_id (the client ID registered for this application)"
        if self.oauth2_client_secret_env is not None and self.oauth2_client_secret_file is not None:
            return "set one of oauth2_client_secret_env and oauth2_client_secret_file"
        overridden = self.oauth2_authorization_url and self.oauth2_token_url
        if self.oauth2_provider is SignInProvider.CUSTOM and not (self.oauth2_issuer or overridden):
            return "oauth2_provider = 'custom' needs oauth2_issuer, or oauth2_authorization_url and oauth2_token_url"
        return None

    def _client_credentials_problem(self) -> str | None:
        if self.oauth2_provider is SignInProvider.GOOGLE:
            return (
                "oauth2_client_credentials: Google has no client credentials grant for Gmail; a Workspace "
                "organisation uses domain-wide delegation through oauth2_token_command with {user} instead"
            )
        if self.oauth2_client_id is None:
            return "oauth2_client_credentials needs oauth2_client_id (the organisation's app registration)"
        if (self.oauth2_client_secret_env is None) == (self.oauth2_client_secret_file is None):
            return (
                "oauth2_client_credentials needs the application's secret: set one of "
                "oauth2_client_secret_env and oauth2_client_secret_file"
            )
        if self.oauth2_provider is SignInProvider.MICROSOFT and self.oauth2_tenant in _SHARED_TENANTS:
            return (
                f"oauth2_client_credentials needs your tenant's id or domain in oauth2_tenant, not "
                f"{self.oauth2_tenant!r}: an application signs in to one organisation"
            )
        if self.oauth2_provider is SignInProvider.CUSTOM and not (
            self.oauth2_issuer or self.oauth2_token_url
        ):
            return "oauth2_client_credentials with oauth2_provider = 'custom' needs oauth2_issuer or oauth2_token_url"
        return None


def preset_endpoints(settings: SignInSettings) -> Endpoints | None:
    """The provider's own endpoints (None for custom)."""
    if settings.oauth2_provider is SignInProvider.MICROSOFT:
        base = f"https://login.microsoftonline.com/{settings.oauth2_tenant}/oauth2/v2.0"
        return Endpoints(f"{base}/authorize", f"{base}/token", device=f"{base}/devicecode")
    if settings.oauth2_provider is SignInProvider.GOOGLE:
        return Endpoints(
            "https://accounts.google.com/o/oauth2/v2/auth",
            "https://oauth2.googleapis.com/token",
            device="https://oauth2.googleapis.com/device/code",
            revocation="https://oauth2.googleapis.com/revoke",
        )
    return None


def oauth_client(settings: SignInSettings, timeout_s: float = 10.0) -> OAuthClient:
    """The OAuth client of an account with ``oauth2_provider`` set (a custom issuer is asked for its
    endpoints here: :class:`~mail_imap_mcp.net.tokens.TokenUnavailable` if it cannot be reached)."""
    assert settings.oauth2_provider is not None and settings.oauth2_client_id is not None
    found = preset_endpoints(settings)
    overridden = settings.oauth2_token_url and (
        settings.oauth2_authorization_url or settings.oauth2_client_credentials
    )
    if found is None and not overridden:
        assert settings.oauth2_issuer is not None
        found = discover(settings.oauth2_issuer, timeout_s)
    endpoints = Endpoints(
        settings.oauth2_authorization_url or (found.authorization if found else ""),
        settings.oauth2_token_url or (found.token if found else ""),
        settings.oauth2_device_url or (found.device if found else None),
        settings.oauth2_revocation_url or (found.revocation if found else None),
    )
    default_scopes: dict[SignInProvider, tuple[str, ...]] = {
        SignInProvider.MICROSOFT: _MICROSOFT_SCOPES,
        SignInProvider.GOOGLE: _GOOGLE_SCOPES,
    }
    fallback: tuple[str, ...] = ("openid", "offline_access")
    if settings.oauth2_client_credentials:
        default_scopes, fallback = {SignInProvider.MICROSOFT: _MICROSOFT_APP_SCOPES}, ()
    scopes = settings.oauth2_scopes or default_scopes.get(settings.oauth2_provider, fallback)
    sends = bool(getattr(settings, "send_enabled", False))  # AccountConfig's: the send tool's switch
    preset = not settings.oauth2_scopes and not settings.oauth2_client_credentials
    if sends and preset and settings.oauth2_provider is SignInProvider.MICROSOFT:
        scopes = (*scopes, _MICROSOFT_SEND_SCOPE)
    # A refresh token needs consent to offline access: OpenID Connect grants offline_access only with
    # prompt=consent, and Google issues one only for access_type=offline (again on a later sign-in
    # only with prompt=consent).
    extra: tuple[tuple[str, str], ...] = (("prompt", "consent"),)
    if settings.oauth2_provider is SignInProvider.GOOGLE:
        extra += (("access_type", "offline"),)
    secret = None
    if settings.oauth2_client_secret_env is not None or settings.oauth2_client_secret_file is not None:
        secret = resolve_secret(
            env_var=settings.oauth2_client_secret_env,
            file=settings.oauth2_client_secret_file,
            file_setting="oauth2_client_secret_file",
            what="client secret",
        )
    issuer = _issuer(settings, found)
    return OAuthClient(endpoints, settings.oauth2_client_id, tuple(scopes), secret, extra, issuer)


def _issuer(settings: SignInSettings, found: Endpoints | None) -> str | None:
    """The ``iss`` of the provider's ID tokens, where known: Google's, Microsoft's (the tenant's where it
    is given by its id, else any tenant's), the issuer a custom provider's metadata names; None where the
    endpoints were set by hand (another cloud, a test's provider) or the metadata names none."""
    if settings.oauth2_authorization_url or settings.oauth2_token_url:
        return None
    if settings.oauth2_provider is SignInProvider.GOOGLE:
        return "https://accounts.google.com"
    if settings.oauth2_provider is SignInProvider.MICROSOFT:
        tenant = settings.oauth2_tenant
        by_id = re.fullmatch(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}", tenant) is not None
        return f"https://login.microsoftonline.com/{tenant if by_id else '{tenantid}'}/v2.0"
    return found.issuer if found is not None else None
