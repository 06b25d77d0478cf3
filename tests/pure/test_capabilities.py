"""A capability is one declaration (``capabilities.py``): every tool names one, and its gate refuses naming
the setting that would allow it and, where the MCP Bundle's form sets that, the form field's label."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.capabilities import (
    CAPABILITIES,
    DESTRUCTIVE_WRITING,
    READING,
    RULES,
    SEARCHING_BY_MEANING,
    SENDING,
    WRITING,
    Capability,
    Effect,
    SurfaceGroup,
)
from mail_imap_mcp.config import Config, load_config
from mail_imap_mcp.config.form import form_label
from mail_imap_mcp.config.switches import INDEX, SWITCHES, Switch
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.tool_calls import listing
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


# The table: every declared capability under every combination of the switches, on one account whose
# submission server is known (sending's other need). A capability is listed exactly when its gate
# permits it, and refused naming its own setting otherwise: a switch that is off fails closed, whatever
# its scope and whether or not the capability words its refusal itself.
GMAIL = {"host": "imap.gmail.com", "username": "me@gmail.com", "password_env": "P"}
#: A capability of a kind that exists (a read of the index), with a switch no capability had: declared
#: here, and nowhere else, it is refused while its switch is off.
ATTACHMENTS_INDEXED = Switch("index_attachments", "account", "INDEX_ATTACHMENTS")
SEARCHING_ATTACHMENTS = Capability(
    "searching attachments", Effect.READ, SurfaceGroup.READS, 0, ATTACHMENTS_INDEXED, "call"
)
#: ... and one with a new switch of [server]'s.
INDEXING = replace(
    SEARCHING_ATTACHMENTS, name="indexing", setting=Switch("index", "server", "MAIL_IMAP_INDEX")
)
DECLARED = (*CAPABILITIES, SEARCHING_ATTACHMENTS, INDEXING)


def _combinations(download_dir: Path) -> Iterator[dict[str, Any]]:
    switches = itertools.product(
        (None, False, True),
        (False, True),
        (False, True),
        (None, download_dir),
        (False, True),
        (None, False, True),
        (None, False),
    )
    for own_writes, writes, sends, folder, unsubscribes, attachments, meaning in switches:
        account = {
            **GMAIL,
            "write_enabled": own_writes,
            "send_enabled": sends,
            "index_attachments": attachments,
            "index_meaning": meaning,
            # Rules, with index_attachments's three values: off; on at Gmail (no ManageSieve); on with a
            # ManageSieve server of its own.
            "rules_enabled": attachments is not None,
            **({"sieve": {"host": "sieve.example.com"}} if attachments else {}),
        }
        if sends:
            account["allowed_recipients"] = ["@example.com"]
        server = {"write_enabled": writes, "download_dir": folder, "unsubscribe_enabled": unsubscribes}
        yield {"accounts": {"a": account}, "server": {**server, "index": not writes}}


def test_every_capability_is_listed_exactly_when_permitted_and_refused_naming_its_setting_otherwise(
    tmp_path: Path,
) -> None:
    seen: set[tuple[str, bool]] = set()
    for raw in _combinations(tmp_path):
        config = Config.model_validate(raw)
        for capability in DECLARED:
            refusal = capability.permits(config, "a")
            assert capability.on(config, "") is (refusal is None), (capability.name, raw)
            seen.add((capability.name, refusal is None))
            if refusal is None:
                capability.gate(config, "a")
                continue
            if capability.on_with_any:  # no switch of its own: off where each capability it follows is
                assert not any(other.allows(config, "a") for other in capability.on_with_any)
                switches = [other.setting.key for other in capability.on_with_any if other.setting]
                assert refusal.setting == switches[0] and all(key in refusal.message for key in switches)
                continue
            assert capability.setting is not None
            # Refused for its switch, or for what it needs besides (search by meaning: the index).
            needed = capability.requires(config, "a") if capability.requires else None
            off = not capability.allows(config, "a")
            setting = capability.setting.key if off or needed is None else needed.setting
            assert refusal.setting == setting
            with pytest.raises(ToolFailure) as refused:
                capability.gate(config, "a")
            meaning = capability is SEARCHING_BY_MEANING  # a call giving about/like: an argument not there
            unsupported = capability is RULES and not off  # a server without ManageSieve
            expected = ErrorCode.UNSUPPORTED if unsupported else ErrorCode.PERMISSION_DENIED
            assert refused.value.code is (ErrorCode.INVALID_INPUT if meaning else expected)
            assert refused.value.details["setting"] == setting
            assert setting in refused.value.message
    switched = {
        capability.name for capability in DECLARED if capability.setting is not None or capability.on_with_any
    }
    assert seen >= {(name, on) for name in switched for on in (False, True)}  # each both ways


def test_a_capability_with_a_new_switch_is_refused_in_words_of_its_own_setting() -> None:
    config = Config.model_validate({"accounts": {"a": {**GMAIL, "index_attachments": False}}})
    refusal = SEARCHING_ATTACHMENTS.permits(config, "a")
    assert refusal is not None and refusal.failure().details == {
        "account_id": "a",
        "setting": "index_attachments",
    }
    assert refusal.message == (
        "Searching attachments is turned off for account 'a'; nothing was done. Only the user can turn it on "
        "(index_attachments in [accounts.a])."
    )
    config = Config.model_validate({"accounts": {"a": GMAIL}, "server": {"index": False}})
    assert (INDEXING.permits(config, "a") or pytest.fail("permitted")).setting == "index"


def test_search_by_meaning_is_on_where_the_index_keeps_vectors_and_refused_naming_what_turns_it_on(
    tmp_path: Path,
) -> None:
    def refused(raw: dict[str, Any]) -> tuple[str, str] | None:
        config = Config.model_validate({"accounts": {"a": FILE_ACCOUNT}, **raw})
        refusal = SEARCHING_BY_MEANING.permits(config, "a")
        assert SEARCHING_BY_MEANING.on(config, "") is (refusal is None)
        if refusal is None:
            return None
        assert refusal.failure().code is ErrorCode.INVALID_INPUT
        return refusal.setting, refusal.message

    assert refused({"server": {"index": True}}) is None  # on by default with the index
    off = refused({"server": {"index": True, "index_meaning": False}})
    assert off is not None and off[0] == "index_meaning"
    assert "index_meaning in [accounts.a]" in off[1]
    no_index = refused({})
    assert no_index is not None and no_index[0] == "index"
    assert no_index[1].endswith(
        "the user sets index = true in [server] (or MAIL_IMAP_INDEX=true), or index = true in [accounts.a] "
        "for this account only."
    )
    # A model that cannot run here (a model directory without a model): the reason, naming the setting
    # (details.setting said index_meaning, which turns it off, not on).
    no_model = refused({"server": {"index": True}, "index": {"meaning_model_dir": str(tmp_path)}})
    assert no_model is not None and no_model[0] == "meaning_model_dir" and "meaning_model_dir" in no_model[1]


def test_regression_search_by_meaning_without_the_index_names_the_bundle_forms_field() -> None:
    """Issue 80: a bundle user was told to set MAIL_IMAP_DEFAULT_INDEX, which no field of their form sets;
    the refusal names "Keep a local index" (MAIL_IMAP_INDEX), the field that turns the index on."""
    refusal = SEARCHING_BY_MEANING.permits(load_config(None, FORM), "default")
    assert refusal is not None and (refusal.setting, refusal.field) == ("index", "Keep a local index")
    assert refusal.message.endswith(
        'the user turns on "Keep a local index" (MAIL_IMAP_INDEX=true), or sets MAIL_IMAP_DEFAULT_INDEX=true '
        "for this account only."
    )
    assert refusal.failure().details["field"] == "Keep a local index"
    own = load_config(None, {**FORM, "MAIL_IMAP_INDEX": "true", "MAIL_IMAP_DEFAULT_INDEX": "false"})
    refusal = SEARCHING_BY_MEANING.permits(own, "default")
    assert refusal is not None and refusal.message.endswith("the user sets MAIL_IMAP_DEFAULT_INDEX=true.")


def test_where_a_capability_is_checked_has_no_default() -> None:
    with pytest.raises(TypeError, match="checked"):
        Capability("x", Effect.READ, SurfaceGroup.READS, 0, None)  # type: ignore[call-arg]


def test_every_tool_is_listed_exactly_when_its_capability_permits_it_for_the_caller(tmp_path: Path) -> None:
    """``listing`` (what tools/list shows) and the gates agree, tool by tool, argument by argument."""
    for raw in _combinations(tmp_path):
        raw["server"]["index"] = False  # no index is started (the pure tier opens no connection)
        app = AppContext.from_config(Config.model_validate(raw))
        try:
            listed = listing(app).tools
            for spec in TOOLS:
                assert (spec.name in listed) is (spec.listed_with.permits(app.full_config, "a") is None)
                if spec.name in listed:
                    hidden = listed[spec.name].hidden_arguments
                    for name, switch in spec.gated_arguments.items():
                        assert (name in hidden) is (switch.permits(app.full_config, "a") is not None)
                    for name, gated in spec.gated_values.items():
                        off = listed[spec.name].hidden_values.get(name, frozenset())
                        assert off == {
                            value for value, switch in gated.items() if switch.permits(app.full_config, "a")
                        }
        finally:
            app.close()


def test_each_switch_is_declared_once_and_the_forms_label_is_derived_from_its_variable() -> None:
    assert {capability.setting for capability in CAPABILITIES} - {None} == set(SWITCHES)
    labels = {switch.key: form_label(switch.form_variable) for switch in SWITCHES}
    assert labels == {
        "write_enabled": "Allow changes to mail",
        "send_enabled": "Allow sending drafts",
        "download_dir": "Folder to save attachments to (optional)",
        "unsubscribe_enabled": "Allow unsubscribing from mailing lists",
        "index_meaning": None,
        "rules_enabled": "Allow rules on your mail server",
    }
    assert form_label(INDEX.form_variable) == "Keep a local index"
