"""The one-click unsubscribe request against a local HTTPS server with a test CA (issue 60 item 2):
exactly one POST with the RFC 8058 body; a redirect not followed, a cookie never sent back, a 5xx
reported, a hang ended by the one deadline, the certificate checked against the original host name;
and without the test-only allowance, the loopback server is refused before any connection."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mail_imap_mcp.net.one_click import ONE_CLICK_BODY, OneClickFailed, OneClickRefused, one_click_target
from tests.support.patience import eventually
from tests.support.servers.one_click_server import IDN_HOST, LIST_HOST, OneClickServer, one_click_server


@pytest.fixture
def server() -> Iterator[OneClickServer]:
    with one_click_server() as running:
        running.names = {LIST_HOST: ["127.0.0.1"], IDN_HOST: ["127.0.0.1"], "other.example": ["127.0.0.1"]}
        yield running


def test_one_post_with_the_rfc_8058_body_and_nothing_else(server: OneClickServer) -> None:
    status = server.client().post(one_click_target(f"https://{LIST_HOST}/ok?list=42"))
    assert status == 200
    (request,) = server.requests
    assert (request.method, request.path, request.body) == ("POST", "/ok?list=42", ONE_CLICK_BODY)
    assert request.headers["Host"] == LIST_HOST
    assert request.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert not {"Cookie", "Authorization", "Proxy-Authorization"} & set(request.headers)
    assert server.connections == [("127.0.0.1", server.port)] and server.resolved == [LIST_HOST]


def test_an_international_host_is_resolved_and_verified_as_its_a_label(server: OneClickServer) -> None:
    assert server.client().post(one_click_target("https://bücher.example/ok")) == 200
    assert server.resolved == [IDN_HOST] and server.requests[0].headers["Host"] == IDN_HOST


def test_a_redirect_is_reported_and_not_followed(server: OneClickServer) -> None:
    assert server.client().post(one_click_target(f"https://{LIST_HOST}/redirect")) == 302
    assert [r.path for r in server.requests] == ["/redirect"]


def test_a_cookie_set_is_never_sent_back(server: OneClickServer) -> None:
    client = server.client()
    for _ in range(2):
        assert client.post(one_click_target(f"https://{LIST_HOST}/cookie")) == 200
    assert len(server.requests) == 2 and all("Cookie" not in r.headers for r in server.requests)


def test_a_server_error_is_its_status(server: OneClickServer) -> None:
    assert server.client().post(one_click_target(f"https://{LIST_HOST}/fail")) == 503
    assert len(server.requests) == 1


def test_a_server_that_never_answers_is_ended_by_the_one_deadline(server: OneClickServer) -> None:
    with pytest.raises(OneClickFailed) as failed:
        server.client(deadline_s=0.5).post(one_click_target(f"https://{LIST_HOST}/hang"))
    assert (failed.value.stage, failed.value.limit) == ("answer", "deadline")
    eventually(lambda: len(server.requests) == 1, within=5)


def test_a_certificate_for_another_name_is_refused(server: OneClickServer) -> None:
    with pytest.raises(OneClickFailed, match=r"certificate is not valid for other\.example"):
        server.client().post(one_click_target("https://other.example/ok"))
    assert server.requests == []


def test_without_the_allowance_the_loopback_server_is_refused_before_connecting(
    server: OneClickServer,
) -> None:
    with pytest.raises(OneClickRefused, match=r"127\.0\.0\.1, which is not a public address"):
        server.client(allowed=False).post(one_click_target(f"https://{LIST_HOST}/ok"))
    assert server.connections == [] and server.requests == []


def test_a_name_that_does_not_resolve_is_a_failure_of_resolving(server: OneClickServer) -> None:
    with pytest.raises(OneClickFailed) as failed:
        server.client().post(one_click_target("https://unknown.example/ok"))
    assert failed.value.stage == "resolve" and server.connections == []


def test_no_proxy_or_netrc_of_the_environment_is_used(
    server: OneClickServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://proxy-user:proxy-secret@127.0.0.1:9")
    netrc = tmp_path / ".netrc"
    netrc.write_text(f"machine {LIST_HOST} login someone password netrc-secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert server.client().post(one_click_target(f"https://{LIST_HOST}/ok")) == 200
    (request,) = server.requests
    assert server.connections == [("127.0.0.1", server.port)]
    assert not {"Authorization", "Proxy-Authorization"} & set(request.headers)
