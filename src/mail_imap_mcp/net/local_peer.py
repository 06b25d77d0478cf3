"""Whose program is at the other end of a connection to one of our loopback listeners (an approval page,
a sign-in's redirect), so that another OS user of this machine can neither answer the page nor finish the
sign-in, whatever address it learnt.

On Linux the kernel says who owns each TCP socket (``/proc/net/tcp`` and ``tcp6``, readable by every
user): the peer socket, whose local address is the connection's peer and whose remote address is our
listener, must belong to this process's user (or root, who can read this process's memory anyway).
Elsewhere the owner is not known here (:func:`checks_peers` is false): there the page's address is the
secret, kept off every command line by :mod:`.browser`'s redirect file.

Every listener also serves :data:`LAUNCH_PATH`, an address that holds no secret and forwards to the
secret one, to a peer found to be this user's only: the address a browser is given where peers are
checked.
"""

from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path

__all__ = ["LAUNCH_PATH", "checks_peers", "loopback_host_allowed", "refusal", "refused_page_text"]

#: The path every loopback listener forwards (303) to its secret address, for this OS user's peer only.
LAUNCH_PATH = "/start"
_TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
_UID_FIELD = 7


def checks_peers(tables: tuple[Path, ...] = _TABLES) -> bool:
    """Whether the owner of a loopback peer socket can be read here (Linux's ``/proc/net/tcp``)."""
    return os.access(tables[0], os.R_OK)


def loopback_host_allowed(host: str | None, port: int) -> bool:
    """Whether a request's Host names the listener on 127.0.0.1:``port`` (by number or as localhost):
    a page whose name was made to point here (DNS rebinding) names its own host."""
    return host is not None and host.strip().lower() in {f"127.0.0.1:{port}", f"localhost:{port}"}


def _hex_words(address: str, family_v6: bool) -> str:
    packed = ipaddress.ip_address(address).packed
    if family_v6 and len(packed) == 4:
        packed = ipaddress.IPv6Address(f"::ffff:{address}").packed
    # The kernel prints each 32-bit word of the address as a native integer in hex.
    return "".join(
        f"{int.from_bytes(packed[i : i + 4], sys.byteorder):08X}" for i in range(0, len(packed), 4)
    )


def _endpoint(address: tuple[str, int], family_v6: bool) -> str | None:
    host, port = address[0], address[1]
    mapped = ipaddress.ip_address(host)
    if isinstance(mapped, ipaddress.IPv6Address) and mapped.ipv4_mapped is not None:
        host = str(mapped.ipv4_mapped)
    if not family_v6 and ":" in host:
        return None
    return f"{_hex_words(host, family_v6)}:{port:04X}"


def peer_owner(
    listener: tuple[str, int], peer: tuple[str, int], tables: tuple[Path, ...] = _TABLES
) -> int | None:
    """The uid owning the socket at ``peer`` connected to our ``listener`` address, or None when no such
    socket is listed (or the tables cannot be read)."""
    for table in tables:
        family_v6 = table.name.endswith("6")
        theirs, ours = _endpoint(peer, family_v6), _endpoint(listener, family_v6)
        if theirs is None or ours is None:
            continue
        try:
            lines = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > _UID_FIELD and fields[1] == theirs and fields[2] == ours:
                return int(fields[_UID_FIELD])
    return None


def refusal(
    listener: tuple[str, int], peer: tuple[str, int], tables: tuple[Path, ...] = _TABLES
) -> str | None:
    """Why a connection from ``peer`` to our ``listener`` is refused (another OS user's program), or None
    when it may be served: its owner is this user or root, or owners are not known here."""
    if not checks_peers(tables):
        return None
    owner = peer_owner(listener, peer, tables)
    if owner is None:
        return "the program that connected could not be found among this computer's connections"
    if owner in (os.getuid(), 0):
        return None
    return (
        f"the program that connected runs as another user of this computer (uid {owner}, not {os.getuid()})"
    )


def refused_page_text(why: str) -> str:
    """What a refused connection's page tells the user (``why``: :func:`refusal`'s reason)."""
    return (
        f"mail-imap-mcp answers this page only to programs of the user it runs as, and {why}. "
        "Nothing was done. If this is your own browser, open the address that mail-imap-mcp opened "
        "in a browser running as that user (not one started through sudo, another account or another "
        "user's container)."
    )
