"""What tests/unit/test_fake_imap_plans.py shares with other test modules."""

from __future__ import annotations

from mail_imap_mcp.config import AccountConfig, Config
from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.imap.connection import AccountConnection
from tests.support.fake_imap import ScriptedServer
from tests.support.translate import as_tool_failure

UIDVALIDITY = 1700000000


def make_config() -> Config:
    account = {
        "host": "127.0.0.1",
        "port": 1143,
        "security": "plain",
        "username": "ann",
        "password": "secret",
    }
    return Config.model_validate({"accounts": {"default": account}})


def account_config() -> AccountConfig:
    return make_config().accounts["default"]


def examine_answer(exists: int, uidnext: int) -> list[bytes]:
    return [
        b"* FLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft)",
        b"* OK [PERMANENTFLAGS ()] Read-only mailbox.",
        b"* %d EXISTS" % exists,
        b"* 0 RECENT",
        b"* OK [UIDVALIDITY %d] UIDs valid" % UIDVALIDITY,
        b"* OK [UIDNEXT %d] Predicted next UID" % uidnext,
        b"{tag} OK [READ-ONLY] Examine completed",
    ]


def connection(server: ScriptedServer) -> AccountConnection:
    config = account_config()
    return AccountConnection(
        "default",
        config,
        credentials=credentials_for("default", config),
        open_socket=server.open_socket,
        translate=as_tool_failure,
    )
