"""Where an issuer's authorization server metadata is looked for (net/oauth.py ``metadata_urls``): RFC
8414 section 3.1 inserts the well-known name between the host and the issuer's path."""

from __future__ import annotations

from mail_imap_mcp.net.oauth import metadata_urls


def test_an_issuer_with_a_path_has_the_well_known_name_inserted_before_it_first() -> None:
    assert metadata_urls("https://idp.example/tenant/v2/") == (
        "https://idp.example/.well-known/oauth-authorization-server/tenant/v2",
        "https://idp.example/tenant/v2/.well-known/openid-configuration",
        "https://idp.example/tenant/v2/.well-known/oauth-authorization-server",
    )


def test_an_issuer_without_a_path_is_asked_each_place_once() -> None:
    assert metadata_urls("https://idp.example:8443") == (
        "https://idp.example:8443/.well-known/oauth-authorization-server",
        "https://idp.example:8443/.well-known/openid-configuration",
    )
