"""The resource templates are built once per process and shared by every server built (server.py,
subscriptions/mailbox_resource.py): each server lists all four, and a server dropped leaves nothing behind."""

from __future__ import annotations

import gc

from mail_imap_mcp.config import Config
from mail_imap_mcp.server import build_server
from mail_imap_mcp.subscriptions import mailbox_resource

CONFIG = Config.model_validate(
    {"accounts": {"default": {"host": "127.0.0.1", "port": 993, "username": "u", "password_env": "UNSET"}}}
)


def templates_of(server: object) -> dict[str, object]:
    return dict(server._resource_manager._templates)  # type: ignore[attr-defined]


def test_every_server_lists_the_same_four_template_objects() -> None:
    first, second = templates_of(build_server(CONFIG)), templates_of(build_server(CONFIG))
    assert sorted(first) == [
        "imap://{account_id}/mailbox/{mailbox}",
        "imap://{account_id}/mailbox/{mailbox}/message/{uidvalidity}/{uid}",
        "imap://{account_id}/mailbox/{mailbox}/message/{uidvalidity}/{uid}/attachment/{part_id}",
        "imap://{account_id}/mailbox/{mailbox}/message/{uidvalidity}/{uid}/raw",
    ]
    assert all(first[uri] is second[uri] for uri in first)


def test_a_server_dropped_leaves_no_subscriptions_behind() -> None:
    gc.collect()
    before = len(mailbox_resource._OF_SERVER)
    servers = [build_server(CONFIG) for _ in range(3)]
    assert len(mailbox_resource._OF_SERVER) == before + 3
    del servers
    gc.collect()
    assert len(mailbox_resource._OF_SERVER) == before
