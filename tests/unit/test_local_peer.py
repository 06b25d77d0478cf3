"""Whose program is at the other end of a loopback connection (net/local_peer.py, issue 56 item 1): a real
connection of this process is its user's; rows of ``/proc/net/tcp`` and ``tcp6`` written here stand for
another user's (the test as another OS user is tests/integration/sign_in/test_local_user.py)."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mail_imap_mcp.net.local_peer import checks_peers, peer_owner, refusal

linux = pytest.mark.skipif(not checks_peers(), reason="the owner of a connection is read on Linux only")


@pytest.fixture
def connection() -> Iterator[tuple[tuple[str, int], tuple[str, int]]]:
    """A loopback connection of this process: the listener's address and the peer's, as accept() has them."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, peer = server.accept()
        try:
            yield server.getsockname(), peer
        finally:
            accepted.close()
            client.close()


def _word(packed: bytes) -> str:
    return "".join(
        f"{int.from_bytes(packed[i : i + 4], sys.byteorder):08X}" for i in range(0, len(packed), 4)
    )


def _tables(
    tmp_path: Path, peer: tuple[str, int], listener: tuple[str, int], uid: int, v6: bool
) -> tuple[Path, Path]:
    """``/proc/net/tcp`` and ``tcp6`` with one established row: ``peer`` connected to ``listener``, owned
    by ``uid`` (in tcp6 as IPv4-mapped addresses when ``v6``)."""
    head = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    )

    def endpoint(address: tuple[str, int]) -> str:
        packed = socket.inet_aton(address[0])
        if v6:
            packed = bytes(10) + b"\xff\xff" + packed
        return f"{_word(packed)}:{address[1]:04X}"

    row = f"   0: {endpoint(peer)} {endpoint(listener)} 01 00000000:00000000 00:00000000 00000000 {uid:5d} 0 4242 1\n"
    tcp, tcp6 = tmp_path / "tcp", tmp_path / "tcp6"
    tcp.write_text(head + ("" if v6 else row))
    tcp6.write_text(head + (row if v6 else ""))
    return tcp, tcp6


@linux
def test_a_connection_of_this_process_is_its_users(
    connection: tuple[tuple[str, int], tuple[str, int]],
) -> None:
    listener, peer = connection
    assert peer_owner(listener, peer) == os.getuid()
    assert refusal(listener, peer) is None


@pytest.mark.parametrize("v6", [False, True], ids=["tcp", "tcp6 (IPv4-mapped)"])
def test_a_peer_of_another_user_is_refused_saying_whose(tmp_path: Path, v6: bool) -> None:
    listener, peer = ("127.0.0.1", 41000), ("127.0.0.1", 52000)
    other = os.getuid() + 4242
    tables = _tables(tmp_path, peer, listener, other, v6)
    assert peer_owner(listener, peer, tables) == other
    why = refusal(listener, peer, tables)
    assert why is not None and f"another user of this computer (uid {other}" in why
    assert refusal(listener, peer, _tables(tmp_path, peer, listener, os.getuid(), v6)) is None
    assert refusal(listener, peer, _tables(tmp_path, peer, listener, 0, v6)) is None  # root reads us anyway


def test_a_peer_not_listed_is_refused_and_without_tables_nothing_is_judged(tmp_path: Path) -> None:
    listener = ("127.0.0.1", 41000)
    tables = _tables(tmp_path, ("127.0.0.1", 52000), listener, os.getuid(), False)
    why = refusal(listener, ("127.0.0.1", 52001), tables)  # another port: not the row's
    assert why is not None and "could not be found" in why
    missing = (tmp_path / "none", tmp_path / "none6")
    assert not checks_peers(missing) and refusal(listener, ("127.0.0.1", 52001), missing) is None
