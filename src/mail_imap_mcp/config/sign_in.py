"""The built-in sign-in's settings (``oauth2_provider`` and its companions) and what they must hold
together. The client they make, the providers' presets, and where a signed-in account's refresh token is
kept (the OS keychain, never the configuration file) are :mod:`mail_imap_mcp.credentials`'.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints, field_validator

#: Microsoft's tenants of many organisations, which an application's own sign-in cannot use.
_SHARED_TENANTS = frozenset({"common", "organizations", "consumers"})
#: What a tenant's ID or domain is made of (checked in :meth:`SignInSettings._tenant_in_words`).
_TENANT_CHARACTERS = re.compile(r"[A-Za-z0-9.-]+")


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
        description="microsoft: common, organizations, consumers, or your tenant's ID or domain (letters, "
        "digits, dots and hyphens).",
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

    @field_validator("oauth2_tenant")
    @classmethod
    def _tenant_in_words(cls, tenant: str) -> str:
        """A tenant of other characters is refused in words a user reads (an agent relays it), not as the
        pattern it fails."""
        if _TENANT_CHARACTERS.fullmatch(tenant) is None:
            raise ValueError(
                "is not a tenant: give your organisation's tenant ID or domain (letters, digits, dots and "
                "hyphens only, e.g. contoso.onmicrosoft.com), or common, organizations or consumers"
            )
        return tenant

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
