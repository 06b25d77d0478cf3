"""One TLS context per CA file, shared by every connection of the process (``net/tls.py``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trustme

from mail_imap_mcp.net.tls import client_context


def _ca_file(path: Path) -> Path:
    trustme.CA().cert_pem.write_to_path(str(path))
    return path


def test_regression_the_system_trust_store_is_loaded_once_per_process_not_per_connection_pool() -> None:
    """Every new pool loaded the trust store again (10-20 ms of CPU each: a quarter of a read test's)."""
    assert client_context(None) is client_context(None)


def test_a_ca_file_is_loaded_once_while_it_is_unchanged_and_again_once_it_changes(tmp_path: Path) -> None:
    ca_file = _ca_file(tmp_path / "ca.pem")
    first = client_context(ca_file)
    assert client_context(ca_file) is first
    assert client_context(tmp_path / "." / "ca.pem") is first
    assert len(first.get_ca_certs()) >= 1

    _ca_file(ca_file)  # another CA at the same path
    stat = ca_file.stat()
    os.utime(ca_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    again = client_context(ca_file)
    assert again is not first
    assert {c["serialNumber"] for c in again.get_ca_certs()} != {
        c["serialNumber"] for c in first.get_ca_certs()
    }


def test_two_ca_files_get_contexts_of_their_own(tmp_path: Path) -> None:
    assert client_context(_ca_file(tmp_path / "a.pem")) is not client_context(_ca_file(tmp_path / "b.pem"))


def test_a_missing_ca_file_raises_as_loading_it_did(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        client_context(tmp_path / "missing.pem")
