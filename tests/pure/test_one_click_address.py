"""The address rule of the one-click unsubscribe request (issue 60 item 2), on its own: which addresses
are posted to at all, and every address a name resolves to checked before any connection, with the
loopback allowance off unless code hands one in."""

from __future__ import annotations

import ipaddress
import socket
import ssl
from dataclasses import fields

import pytest

from mail_imap_mcp.config import ServerSettings
from mail_imap_mcp.net.one_click import OneClickClient, OneClickRefused, one_click_target
from mail_imap_mcp.net.public_address import NOT_PUBLIC, is_public, refusal


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://lists.example.com/u", "only an https address"),
        ("HTTP://lists.example.com/u", "only an https address"),
        ("ftp://lists.example.com/u", "only an https address"),
        ("https://lists.example.com:8443/u", "only port 443"),
        ("https://lists.example.com:80/u", "only port 443"),
        ("https://user:secret@lists.example.com/u", "user or password"),
        ("https://user@lists.example.com/u", "user or password"),
        ("https://127.0.0.1/u", "names no host"),
        ("https://[::1]/u", "names no host"),
        ("https://10.1.2.3/u", "names no host"),
        ("https:///u", "names no host"),
        ("https://lists.example.com:x/u", "port is malformed"),
    ],
)
def test_an_address_that_is_not_https_on_443_by_name_is_refused(url: str, reason: str) -> None:
    with pytest.raises(OneClickRefused, match=reason):
        one_click_target(url)


def test_a_target_keeps_its_path_and_shows_an_international_host_in_both_forms() -> None:
    plain = one_click_target("https://Lists.Example.com:443/u/abc?list=42&t=x")
    assert (plain.host, plain.path, plain.shown_host) == (
        "lists.example.com",
        "/u/abc?list=42&t=x",
        "lists.example.com",
    )
    international = one_click_target("https://bücher.example/unsubscribe")
    assert international.host == "xn--bcher-kva.example"
    assert international.shown_host == "bücher.example (xn--bcher-kva.example)"


def _refusing_connect(address: str, port: int, timeout: float) -> socket.socket:
    raise AssertionError(f"a connection to {address}:{port} was attempted")


@pytest.mark.parametrize(
    "addresses",
    [
        ["127.0.0.1"],
        ["10.0.0.8"],
        ["192.168.1.20"],
        ["100.64.0.1"],  # shared carrier-grade address space
        ["169.254.169.254"],  # a cloud's metadata service
        ["fd00::1"],  # a private (unique local) IPv6 address
        ["::1"],
        ["::ffff:10.0.0.1"],  # IPv4-mapped
        ["64:ff9b::a00:1"],  # NAT64 of 10.0.0.1
        ["2002:a00:1::"],  # 6to4 of 10.0.0.1
        ["93.184.215.14", "10.0.0.8"],  # one public address does not let a private one through
    ],
)
def test_a_name_resolving_to_any_address_that_is_not_public_is_refused_before_connecting(
    addresses: list[str],
) -> None:
    asked: list[str] = []

    def resolve(host: str, timeout: float) -> list[str]:
        asked.append(host)
        return addresses

    client = OneClickClient(resolve=resolve, connect=_refusing_connect)
    with pytest.raises(OneClickRefused, match="not a public address"):
        client.post(one_click_target("https://lists.example.com/u"))
    assert asked == ["lists.example.com"]


def test_the_loopback_allowance_is_off_by_default_and_no_setting_reaches_it() -> None:
    assert OneClickClient().allowance is None
    assert "allowance" in {f.name for f in fields(OneClickClient)}
    settings = " ".join(ServerSettings.model_fields)
    assert "allowance" not in settings and "loopback" not in settings


def test_regression_a_new_client_loads_the_trust_store_only_for_its_first_request() -> None:
    """Every server start built a client and loaded the system's trust store for it (about 20 ms of CPU)
    for a request most sessions never make; now the first request loads it, and later ones reuse it."""
    client = OneClickClient()
    assert client.context is None
    context = client._tls_context()
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    assert client._tls_context() is context


@pytest.mark.parametrize(
    ("text", "public"),
    [
        ("93.184.215.14", True),
        ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", True),
        ("::ffff:93.184.215.14", True),
        ("64:ff9b::5db8:d70e", True),  # NAT64 of a public address
        ("64:ff9b::a00:1", False),
        ("64:ff9b:1::5db8:d70e", False),  # local-use NAT64
        ("2002:5db8:d70e::1", True),  # 6to4 of a public address
        ("2002:c0a8:101::1", False),  # 6to4 of 192.168.1.1
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", False),  # Teredo
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("255.255.255.255", False),
        ("224.0.0.1", False),
    ],
)
def test_an_address_is_public_only_where_every_address_it_carries_is(text: str, public: bool) -> None:
    assert is_public(ipaddress.ip_address(text)) is public


#: Every range of IANA's IPv4 and IPv6 Special-Purpose Address Registries whose "Globally Reachable" is
#: False, the multicast ranges, and the deprecated IPv6 forms, each by an address inside it: written out
#: here, not read from the table, so that a range dropped from the table fails.
NOT_GLOBAL = {
    "0.0.0.0/8": "0.1.2.3",
    "0.0.0.0/32": "0.0.0.0",
    "10.0.0.0/8": "10.200.0.1",
    "100.64.0.0/10": "100.127.255.254",
    "127.0.0.0/8": "127.8.8.8",
    "169.254.0.0/16": "169.254.169.254",
    "172.16.0.0/12": "172.31.255.1",
    "192.0.0.0/24": "192.0.0.200",
    "192.0.0.0/29": "192.0.0.6",
    "192.0.0.8/32": "192.0.0.8",
    "192.0.0.170/32": "192.0.0.170",
    "192.0.0.171/32": "192.0.0.171",
    "192.0.2.0/24": "192.0.2.77",
    "192.88.99.0/24": "192.88.99.1",
    "192.168.0.0/16": "192.168.255.255",
    "198.18.0.0/15": "198.19.1.1",
    "198.51.100.0/24": "198.51.100.10",
    "203.0.113.0/24": "203.0.113.99",
    "224.0.0.0/4": "239.255.255.250",
    "240.0.0.0/4": "250.1.2.3",
    "255.255.255.255/32": "255.255.255.255",
    "::1/128": "::1",
    "::/128": "::",
    "::/96 (IPv4-compatible)": "::8.8.8.8",
    "::ffff:0:0:0/96 (IPv4-translated)": "::ffff:0:8.8.8.8",
    "::ffff:0:0/96 of a private address": "::ffff:192.168.0.1",
    "64:ff9b::/96 of a private address": "64:ff9b::c0a8:1",
    "64:ff9b:1::/48": "64:ff9b:1:ffff::1",
    "100::/64": "100::dead",
    "100:0:0:1::/64": "100:0:0:1::1",
    "2001::/23": "2001:1ff::1",
    "2001::/32 (Teredo)": "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "2001:2::/48": "2001:2::1",
    "2001:10::/28": "2001:10::1",
    "2001:db8::/32": "2001:db8:85a3::8a2e:370:7334",
    "2002::/16 of a private address": "2002:a00:1::1",
    "3fff::/20": "3fff:fff::1",
    "5f00::/16": "5f00:1::1",
    "fc00::/7": "fdff:ffff::1",
    "fe80::/10": "febf::1",
    "fec0::/10 (site-local)": "fec0::1",
    "ff00::/8": "ff02::1",
}


@pytest.mark.parametrize(("registered", "text"), list(NOT_GLOBAL.items()), ids=list(NOT_GLOBAL))
def test_regression_every_range_that_is_not_global_is_refused(registered: str, text: str) -> None:
    """Python 3.11's is_global took fec0::/10, ::/96 and ::ffff:0:0:0/96 for public (issue 78 S8-2)."""
    assert not is_public(ipaddress.ip_address(text)), registered
    assert refusal(ipaddress.ip_address(text))


@pytest.mark.parametrize(
    "text",
    [
        "8.8.8.8",
        "1.1.1.1",
        "93.184.215.14",
        "192.0.1.1",  # just past 192.0.0.0/24
        "223.255.255.254",  # just below multicast
        "2606:2800:21f:cb07:6820:80da:af6b:8b2c",
        "2001:4860:4860::8888",  # past 2001::/23
        "2a00:1450:4001:80b::200e",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
        "2002:808:808::1",
    ],
)
def test_public_addresses_pass(text: str) -> None:
    assert is_public(ipaddress.ip_address(text))


def test_each_row_of_the_table_is_a_distinct_range_with_a_reason() -> None:
    networks = [network for network, _ in NOT_PUBLIC]
    assert len(set(networks)) == len(networks) and all(why for _, why in NOT_PUBLIC)
    for network in networks:
        for edge in (network.network_address, network.broadcast_address):
            assert not is_public(edge), network


def test_a_name_resolving_to_a_site_local_address_is_refused_naming_the_range() -> None:
    client = OneClickClient(resolve=lambda host, timeout: ["fec0::1"], connect=_refusing_connect)
    with pytest.raises(OneClickRefused, match=r"not a public address \(site-local"):
        client.post(one_click_target("https://lists.example.com/u"))
