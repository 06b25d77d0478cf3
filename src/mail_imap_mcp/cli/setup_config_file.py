"""``setup``'s config file: the account's id (free, or replaced with ``--replace``), its table in TOML, and
the file written whole (0600 in a 0700 directory), another account's table kept as it is. Part of the
command line (:mod:`mail_imap_mcp.cli`)."""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from mail_imap_mcp.cli.setup_asker import SetupRefused
from mail_imap_mcp.config import ACCOUNT_ID_PATTERN

_HEADER = "# Written by `mail-imap-mcp setup`; see `mail-imap-mcp config-example`.\n"
_TABLE_HEADER = re.compile(r"^\s*\[")


def account_table(account_id: str, settings: dict[str, Any]) -> str:
    lines = [f"[accounts.{account_id}]"]
    lines += [f"{key} = {_toml_value(value)}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    """``value`` in TOML: JSON's strings, numbers, booleans and lists are TOML's; a table is inline."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {json.dumps(item)}" for key, item in value.items()) + " }"
    return json.dumps(value)


def write_config(path: Path, table: str, replaced: str | None) -> None:
    """Add ``table`` to the config file (in place of account ``replaced``'s table, if given), created
    0600 in a 0700 directory; the file is replaced whole, and stays 0600."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    text = path.read_text(encoding="utf-8") if path.exists() else _HEADER
    if replaced is not None:
        text = _without_account(path, text, replaced)
    text = text.rstrip("\n") + "\n\n" + table if text.strip() else _HEADER + table
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _without_account(path: Path, text: str, account_id: str) -> str:
    """``text`` without the table ``[accounts.ID]`` and its subtables, every other line kept as it is;
    SetupRefused where the account is written otherwise (the result still holds it, or is not TOML)."""
    own = re.compile(
        rf"^\s*\[\s*accounts\s*\.\s*(?:{re.escape(account_id)}|\"{re.escape(account_id)}\")\s*[.\]]"
    )
    kept: list[str] = []
    inside = False
    for line in text.splitlines(keepends=True):
        if _TABLE_HEADER.match(line):
            inside = bool(own.match(line))
        if not inside:
            kept.append(line)
    result = "".join(kept)
    try:
        still = account_id in tomllib.loads(result).get("accounts", {})
    except tomllib.TOMLDecodeError:
        still = True
    if still:
        raise SetupRefused(
            f"[accounts.{account_id}] in {path} is not written as one table setup can replace: edit the file"
        )
    return result


def chosen_account_id(path: Path, wanted: str | None, replace: bool) -> str:
    """The account's id: ``--account``'s (default: default), refused where it is no id or is already in
    the file without ``--replace``."""
    existing: dict[str, Any] = {}
    if path.is_file():
        try:
            existing = tomllib.loads(path.read_text(encoding="utf-8")).get("accounts", {})
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SetupRefused(f"{path} cannot be read as TOML ({exc}); fix or move it first") from None
    account_id = wanted or "default"
    if not re.fullmatch(ACCOUNT_ID_PATTERN, account_id):
        raise SetupRefused(f"--account {account_id!r}: use letters, digits, _ and - (at most 64)")
    if account_id in existing and not replace:
        raise SetupRefused(
            f"[accounts.{account_id}] is already in {path}: choose another --account, replace it with "
            "--replace, or edit the file"
        )
    return account_id


def accounts_in(path: Path) -> dict[str, Any]:
    accounts: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8")).get("accounts", {})
    return accounts
