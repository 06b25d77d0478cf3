"""The OAuth client of an account's built-in sign-in, from its settings (:mod:`mail_imap_mcp.config.sign_in`):
the providers' presets, a custom issuer's discovered endpoints, the scopes asked for and the client secret.

The presets are written from Microsoft's and Google's documentation and have not been checked against
their live services (docs/providers.md); each endpoint can be overridden, and ``custom`` takes an
``oauth2_issuer`` whose metadata names the endpoints (RFC 8414 / OpenID Connect discovery).
"""

from __future__ import annotations

import re

from mail_imap_mcp.config.secrets import resolve_secret
from mail_imap_mcp.config.sign_in import SignInProvider, SignInSettings
from mail_imap_mcp.net.oauth import Endpoints, OAuthClient, discover

#: The offline_access scope makes Microsoft issue a refresh token.
_MICROSOFT_SCOPES = ("https://outlook.office.com/IMAP.AccessAsUser.All", "offline_access")
#: Sending over Microsoft's SMTP submission takes a scope of its own, of the same resource as the IMAP
#: one (one token serves both); asked only of an account that sends (send_enabled), since consent to it
#: lets the application send as the user.
_MICROSOFT_SEND_SCOPE = "https://outlook.office.com/SMTP.Send"
_GOOGLE_SCOPES = ("https://mail.google.com/",)
#: An application's own token asks for the permissions an admin granted it (IMAP.AccessAsApp).
_MICROSOFT_APP_SCOPES = ("https://outlook.office365.com/.default",)

#: What each provider's authorization request adds, so that the sign-in brings a refresh token. OpenID
#: Connect grants offline_access only with prompt=consent (node-oidc-provider enforces it); Google issues
#: a refresh token only for access_type=offline, and on a later sign-in only with prompt=consent.
#: Microsoft issues one for offline_access without it, and where users may not consent (as many tenants
#: set) prompt=consent answers "Need admin approval" (AADSTS90094) even after an admin consented for the
#: organisation: select_account lets the user pick the account to sign in as instead.
AUTHORIZATION_PARAMETERS: dict[SignInProvider, tuple[tuple[str, str], ...]] = {
    SignInProvider.MICROSOFT: (("prompt", "select_account"),),
    SignInProvider.GOOGLE: (("prompt", "consent"), ("access_type", "offline")),
    SignInProvider.CUSTOM: (("prompt", "consent"),),
}


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
    extra = AUTHORIZATION_PARAMETERS[settings.oauth2_provider]
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
