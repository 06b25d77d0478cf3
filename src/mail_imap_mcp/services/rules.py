"""The rules of an account as its server keeps them (``mail/sieve.py``'s :class:`SieveScripts`, whatever
the protocol): read, changed and undone without losing the user's own script (``rules_script.py`` says
how they are written).

Every change writes, in this order: the undo record (the scripts as they were), the rules' own script,
the user's active script (its marked section), then which script is active. A script someone changed since
it was read (the caller's ``version``), or by hand, is a conflict: nothing is written. ManageSieve has no
compare-and-swap: the scripts are read again at the start of each change, so a change made between that
read and the writes (a few round trips) is the one left unseen.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from mail_imap_mcp.mail.sieve import SieveCapabilities, SieveScripts
from mail_imap_mcp.mail.sieve_errors import NothingToUndo, RulesConflict, ScriptMissing
from mail_imap_mcp.services.rules_script import (
    INCLUDE_SECTION,
    OWN_SCRIPT,
    UNDO_SCRIPT,
    RulesEdited,
    UndoRecord,
    WrittenRule,
    digest,
    own_script,
    read_own_script,
    read_section,
    section,
    with_section,
)


@dataclass
class RulesState:
    """What the server holds now: its capabilities, the active script, where the rules live and them."""

    capabilities: SieveCapabilities
    names: list[str]
    active: str | None
    #: ``own``: the rules' script is the active one (or none is); ``include``: the user's active script
    #: includes it; ``section``: the rules are a marked section of the user's active script.
    mode: str
    texts: dict[str, str | None]
    rules: list[WrittenRule]
    edited: str | None = None

    @property
    def version(self) -> str:
        """A fingerprint of the scripts the rules depend on: a change since is a conflict."""
        shown = json.dumps([self.active, sorted(self.texts.items(), key=lambda item: item[0])], default=str)
        return hashlib.sha256(shown.encode("utf-8", "surrogatepass")).hexdigest()[:12]

    def rule(self, name: str) -> WrittenRule | None:
        return next((written for written in self.rules if written.rule.name == name), None)


def _text(scripts: SieveScripts, names: list[str], name: str) -> str | None:
    return scripts.get_script(name) if name in names else None


def read_state(scripts: SieveScripts, *, reading: bool = False) -> RulesState:
    """The rules as the server holds them (a script changed by hand: ``edited`` says how, no rules), read
    in one round trip where the rules' own script holds them (the list and that script, pipelined).
    ``reading``: only to show the rules, so a user's active script that merely includes them is not read
    (a change reads it: it is written, and its version checked)."""
    capabilities = scripts.capabilities()
    entries, got = scripts.list_and_get([OWN_SCRIPT])
    names = [entry.name for entry in entries]
    active = next((entry.name for entry in entries if entry.active), None)
    own = got.get(OWN_SCRIPT)
    texts: dict[str, str | None] = {OWN_SCRIPT: own}
    if active is None or active == OWN_SCRIPT:
        mode = "own"
    else:
        mode = "include" if capabilities.offers("include") else "section"
        if mode == "section" or not reading:
            texts[active] = scripts.get_script(active)
    state = RulesState(capabilities, names, active, mode, texts, [])
    try:
        if mode == "section":
            state.rules = (read_section(texts[active] or "") or []) if active else []
        elif own is not None:
            state.rules = read_own_script(own)
    except RulesEdited as edited:
        state.edited = str(edited)
    return state


def check_version(state: RulesState, version: str | None) -> None:
    """A conflict where the scripts changed since ``version`` was read, or by hand."""
    if version is not None and version != state.version:
        raise RulesConflict("the rules changed since they were read")
    if state.edited is not None:
        raise RulesConflict(
            f"the rules' script was changed outside this tool ({state.edited})", (OWN_SCRIPT,)
        )


@dataclass
class Written:
    """What a change wrote: the server's warnings (its words), the scripts changed and which is active."""

    warnings: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    active: str | None = None


def planned_texts(state: RulesState, rules: list[WrittenRule]) -> tuple[dict[str, str], str | None]:
    """The scripts to write for ``rules`` (name -> text, in the order written) and the script to make
    active (None: the active one stays)."""
    if state.mode == "own":
        return {OWN_SCRIPT: own_script(rules)}, OWN_SCRIPT if state.active is None else None
    user = state.active
    assert user is not None
    if state.mode == "include":
        return {
            OWN_SCRIPT: own_script(rules),
            user: with_section(state.texts[user] or "", INCLUDE_SECTION),
        }, None
    return {user: with_section(state.texts[user] or "", section(rules))}, None


def check_texts(scripts: SieveScripts, state: RulesState, texts: dict[str, str]) -> list[str]:
    """The server's verdict on each new text before anything is stored (CHECKSCRIPT, where it has it):
    its warnings; a refusal raises with its words. A user's script including the rules is checked when
    it is stored (its include needs the rules' script stored first)."""
    if not state.capabilities.checks_and_renames:
        return []
    said = []
    for name, text in texts.items():
        if name == OWN_SCRIPT or state.mode == "section":
            warning = scripts.check_script(text)
            if warning:
                said.append(warning)
    return said


def write(
    scripts: SieveScripts, state: RulesState, texts: dict[str, str], activate: str | None, change: str
) -> Written:
    """Store ``texts`` after the undo record of the scripts as they are; then make ``activate`` active."""
    changed = {name: text for name, text in texts.items() if state.texts.get(name) != text}
    result = Written(active=activate or state.active)
    if not changed and activate is None:
        return result
    before = {name: state.texts.get(name) for name in changed}
    record = UndoRecord(before, state.active, {name: digest(text) for name, text in changed.items()}, change)
    scripts.put_script(UNDO_SCRIPT, record.text())
    for name, text in changed.items():
        warning = scripts.put_script(name, text)
        if warning:
            result.warnings.append(warning)
        result.changed.append(name)
    if activate is not None:
        scripts.activate(activate)
    return result


def undo(scripts: SieveScripts, state: RulesState) -> tuple[Written, str]:
    """Restore the scripts kept before the last change (while they are still as it left them); the undo
    record then keeps the scripts as they were, so a second undo redoes. What was undone, in words."""
    if UNDO_SCRIPT not in state.names:
        raise NothingToUndo("no change of the rules to undo")
    try:
        record = UndoRecord.of(scripts.get_script(UNDO_SCRIPT))
    except RulesEdited as edited:
        raise RulesConflict(f"the undo record cannot be read ({edited})", (UNDO_SCRIPT,)) from None
    now = {name: _text(scripts, state.names, name) for name in record.before}
    moved = [name for name, text in now.items() if digest(text) != record.after.get(name)]
    if moved:
        raise RulesConflict(
            f"the script(s) {', '.join(moved)} changed since the last change of the rules", tuple(moved)
        )
    again = UndoRecord(now, state.active, {name: digest(text) for name, text in record.before.items()},
                       f"undo of: {record.change}")  # fmt: skip
    scripts.put_script(UNDO_SCRIPT, again.text())
    result = Written(active=record.active)
    if record.active is None and state.active is not None:
        scripts.deactivate()
    for name, text in record.before.items():
        if text is not None:
            warning = scripts.put_script(name, text)
            if warning:
                result.warnings.append(warning)
            result.changed.append(name)
    if record.active is not None and record.active != state.active:
        scripts.activate(record.active)
    for name, text in record.before.items():
        if text is None and name in state.names:
            _delete(scripts, name)
            result.changed.append(name)
    return result, record.change


def _delete(scripts: SieveScripts, name: str) -> None:
    with contextlib.suppress(ScriptMissing):
        scripts.delete_script(name)


def change_rules(
    scripts: SieveScripts,
    version: str | None,
    change: Callable[[RulesState], tuple[list[WrittenRule], str]],
) -> tuple[RulesState, Written, str]:
    """Read the rules, check ``version``, apply ``change`` (the new rules and its words), check and write."""
    state = read_state(scripts)
    check_version(state, version)
    rules, words = change(state)
    texts, activate = planned_texts(state, rules)
    checked = check_texts(scripts, state, texts)
    written = write(scripts, state, texts, activate, words)
    written.warnings[:0] = checked
    return state, written, words


__all__ = [
    "RulesState",
    "Written",
    "change_rules",
    "check_version",
    "planned_texts",
    "read_state",
    "undo",
    "write",
]
