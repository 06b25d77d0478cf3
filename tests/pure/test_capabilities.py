"""A capability is one declaration (``capabilities.py``): every tool names one, and its gate refuses naming
the setting that would allow it and, where the MCP Bundle's form sets that, the form field's label."""

from __future__ import annotations

from mail_imap_mcp.capabilities import CAPABILITIES, DESTRUCTIVE_WRITING, READING, SENDING, WRITING
from mail_imap_mcp.config import Config, load_config
from mail_imap_mcp.tools.registry import TOOLS
from tests.support.shared.env_form import FORM

FILE_ACCOUNT = {"host": "imap.example.org", "username": "me", "password_env": "P"}


def test_every_tool_declares_one_of_the_capabilities() -> None:
    # A capability of its own arguments (saving attachments: imap_get_attachment's save) is declared too.
    # ... and of its arguments' values (unsubscribing: imap_apply_to_messages's action unsubscribe).
    assert {capability for spec in TOOLS for capability in spec.capabilities} == set(CAPABILITIES)
    assert {spec.name for spec in TOOLS if spec.capability is SENDING} == {"imap_send_draft"}


def test_a_bundle_account_is_refused_naming_the_form_fields_that_would_allow_it() -> None:
    config = load_config(None, FORM)
    writes, sends = WRITING.permits(config, "default"), SENDING.permits(config, "default")
    assert writes is not None and sends is not None
    assert (writes.setting, writes.field) == ("write_enabled", "Allow changes to mail")
    assert (sends.setting, sends.field) == ("send_enabled", "Allow sending drafts")
    assert sends.failure().details == {
        "account_id": "default",
        "setting": "send_enabled",
        "field": "Allow sending drafts",
    }
    assert '"Allow sending drafts" (MAIL_IMAP_DEFAULT_SEND_ENABLED)' in sends.message
    assert READING.permits(config, "default") is None


def test_a_file_account_is_refused_naming_the_setting_alone() -> None:
    config = Config.model_validate({"accounts": {"work": FILE_ACCOUNT}})
    refusal = DESTRUCTIVE_WRITING.permits(config, "work")
    assert refusal is not None and refusal.field is None
    assert refusal.failure().details == {"account_id": "work", "setting": "write_enabled"}
    assert "write_enabled = true in [server]" in refusal.message


def test_a_capability_turned_on_permits_and_lists() -> None:
    config = Config.model_validate({"accounts": {"work": FILE_ACCOUNT}, "server": {"write_enabled": True}})
    assert WRITING.permits(config, "work") is None and WRITING.on(config, "")
    assert not SENDING.on(config, "")


def test_sending_without_an_smtp_server_is_unavailable_naming_the_setting_to_fill_in() -> None:
    sending = {**FILE_ACCOUNT, "send_enabled": True, "allowed_recipients": ["@example.com"]}
    config = Config.model_validate({"accounts": {"work": sending}})
    refusal = SENDING.permits(config, "work")
    assert refusal is not None and refusal.failure().code.value == "unavailable"
    assert refusal.setting == "host in [accounts.work.smtp]" and SENDING.on(config, "")
