"""What a message offers for leaving its list (issue 60 item 2): one-click only with https, the
RFC 8058 List-Unsubscribe-Post and a DKIM signature the trusted receiving server verified whose h=
covers both headers; a mailto keeps only its one address, subject and body."""

from __future__ import annotations

from mail_imap_mcp.mime.authentication import TrustedServers, authentication_results
from mail_imap_mcp.mime.list_unsubscribe import mailto_unsubscribe, unsubscribe_offer

TRUSTED = TrustedServers(frozenset({"mx.example.net"}))
SIGNED = "v=1; a=rsa-sha256; d=news.example; s=sel; h=From:Subject:List-Unsubscribe:List-Unsubscribe-Post; b=AbCd123=="
PASS = "mx.example.net; spf=pass smtp.mailfrom=news.example; dkim=pass header.d=news.example header.s=sel header.b=AbCd"


def headers(**overrides: list[str]) -> dict[str, list[str]]:
    found = {
        "list-id": ['"Weekly News" <weekly.news.example>'],
        "list-unsubscribe": ["<mailto:leave@news.example?subject=unsub>, <https://news.example/u/1>"],
        "list-unsubscribe-post": ["List-Unsubscribe=One-Click"],
        "dkim-signature": [SIGNED],
        "authentication-results": [PASS],
        "from": ["News <n@news.example>"],
    }
    found.update({key.replace("_", "-"): value for key, value in overrides.items()})
    return found


def offer(found: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    trusted = authentication_results(found.get("authentication-results", []), TRUSTED).trusted
    return unsubscribe_offer(found, trusted)


def test_one_click_with_a_verified_signature_covering_both_headers() -> None:
    found = offer(headers())
    assert found is not None and found.one_click and found.https == ("https://news.example/u/1",)
    assert found.list_name == "Weekly News"


def test_no_one_click_without_each_condition() -> None:
    without_post = offer(headers(list_unsubscribe_post=[]))
    assert (
        without_post is not None and not without_post.one_click and "one-click" in without_post.not_one_click
    )
    not_covered = offer(headers(dkim_signature=[SIGNED.replace(":List-Unsubscribe-Post", "")]))
    assert not_covered is not None and not not_covered.one_click and "DKIM" in not_covered.not_one_click
    # A pass from a server the account does not trust (the sender may have written it) counts for nothing.
    untrusted = offer(headers(authentication_results=[PASS.replace("mx.example.net", "mx.attacker.example")]))
    assert untrusted is not None and not untrusted.one_click
    failed = offer(headers(authentication_results=[PASS.replace("dkim=pass", "dkim=fail")]))
    assert failed is not None and not failed.one_click
    # A passing signature of another domain does not vouch for this one's h=.
    other = offer(
        headers(authentication_results=[PASS.replace("header.d=news.example", "header.d=else.example")])
    )
    assert other is not None and not other.one_click
    http_only = offer(headers(list_unsubscribe=["<http://news.example/u/1>"]))
    assert http_only is not None and not http_only.one_click and http_only.https == ()
    assert offer(headers(list_unsubscribe=[])) is None


def test_a_mailto_keeps_only_its_address_subject_and_body() -> None:
    mailto = mailto_unsubscribe(
        "mailto:leave@news.example?subject=stop%20it&cc=boss@corp.example&bcc=x@y.example&body=please"
    )
    assert mailto is not None
    assert (mailto.address, mailto.subject, mailto.body) == ("leave@news.example", "stop it", "please")
    assert mailto_unsubscribe("mailto:a@x.example,b@x.example") is None
    assert mailto_unsubscribe("https://x.example") is None
    injected = mailto_unsubscribe("mailto:leave@news.example?subject=a%0D%0ABcc:%20victim@x.example")
    assert injected is not None and "\n" not in injected.subject and "\r" not in injected.subject
