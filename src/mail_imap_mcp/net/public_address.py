"""Which addresses are public, for the one-click unsubscribe request: one table, not the Python's
``is_global`` (3.11's takes deprecated site-local ``fec0::/10``, IPv4-compatible ``::/96`` and
IPv4-translated ``::ffff:0:0:0/96`` addresses for public, and later Pythons change it again).

:data:`NOT_PUBLIC` lists every range of IANA's IPv4 and IPv6 Special-Purpose Address Registries that is
not global, the multicast ranges, and the deprecated IPv6 ranges an address may still be written in. A
few ranges the registries call global are refused whole with the block around them (the anycast and
identifier addresses of ``192.0.0.0/24`` and ``2001::/23``): no list's web server is there. An IPv6
address that carries an IPv4 one (IPv4-mapped, NAT64 ``64:ff9b::/96``, 6to4) is judged by that one.
"""

from __future__ import annotations

import ipaddress

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def _table(*rows: tuple[str, str]) -> tuple[tuple[IpNetwork, str], ...]:
    return tuple((ipaddress.ip_network(network), why) for network, why in rows)


#: Every range no request goes to, and why (RFC or registry name).
NOT_PUBLIC: tuple[tuple[IpNetwork, str], ...] = _table(
    ("0.0.0.0/8", "this network (RFC 791)"),
    ("10.0.0.0/8", "private use (RFC 1918)"),
    ("100.64.0.0/10", "shared address space, carrier-grade NAT (RFC 6598)"),
    ("127.0.0.0/8", "loopback (RFC 1122)"),
    ("169.254.0.0/16", "link local (RFC 3927)"),
    ("172.16.0.0/12", "private use (RFC 1918)"),
    ("192.0.0.0/24", "IETF protocol assignments (RFC 6890), its anycast addresses too"),
    ("192.0.2.0/24", "documentation, TEST-NET-1 (RFC 5737)"),
    ("192.88.99.0/24", "deprecated 6to4 relay anycast (RFC 7526)"),
    ("192.168.0.0/16", "private use (RFC 1918)"),
    ("198.18.0.0/15", "benchmarking (RFC 2544)"),
    ("198.51.100.0/24", "documentation, TEST-NET-2 (RFC 5737)"),
    ("203.0.113.0/24", "documentation, TEST-NET-3 (RFC 5737)"),
    ("224.0.0.0/4", "multicast (RFC 5771)"),
    ("240.0.0.0/4", "reserved, and the limited broadcast 255.255.255.255 (RFC 1112, RFC 919)"),
    ("::/96", "IPv4-compatible, deprecated (RFC 4291), with :: and ::1"),
    ("::ffff:0:0:0/96", "IPv4-translated (RFC 2765)"),
    ("64:ff9b:1::/48", "local-use IPv4/IPv6 translation (RFC 8215)"),
    ("100::/64", "discard-only (RFC 6666)"),
    ("100:0:0:1::/64", "dummy IPv6 prefix (RFC 9780)"),
    ("2001::/23", "IETF protocol assignments (RFC 2928): Teredo, benchmarking, ORCHID, anycast"),
    ("2001:db8::/32", "documentation (RFC 3849)"),
    ("3fff::/20", "documentation (RFC 9637)"),
    ("5f00::/16", "segment routing (SRv6) SIDs (RFC 9602)"),
    ("fc00::/7", "unique local (RFC 4193)"),
    ("fe80::/10", "link-local unicast (RFC 4291)"),
    ("fec0::/10", "site-local, deprecated (RFC 3879)"),
    ("ff00::/8", "multicast (RFC 4291)"),
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def refusal(address: IpAddress) -> str | None:
    """Why no request goes to ``address`` (the range of :data:`NOT_PUBLIC` it is in, or that of the IPv4
    address it carries); None where it is public."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return refusal(embedded)
    for network, why in NOT_PUBLIC:
        if address.version == network.version and address in network:
            return why
    return None


def is_public(address: IpAddress) -> bool:
    """Whether ``address`` is public: in no range of :data:`NOT_PUBLIC`, nor the IPv4 address it carries."""
    return refusal(address) is None
