"""What a tool may do to mail, declared once per capability: its switch (``config/switches.py``), where its
gate runs, its effect and MCP annotations, its share of the tool-surface budget, and
:meth:`Capability.permits`, the one gate, which refuses wherever its switch is off.

Every tool declares its capability (``tools/spec.py``); ``tool_calls.py`` lists a tool only where its
capability is on (``listing``), runs the gate of a capability checked at the call, and builds each call's
``ToolCall``, whose ``write_connection`` runs the tool's own capability's gate; the surface test sums the
budget shares of the capabilities a configuration turns on. A new capability of an existing kind is a
declaration here and its tool's ``capability=``; a new switch, a ``Switch`` beside the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import KW_ONLY, dataclass, replace
from enum import StrEnum
from typing import Any, Literal

from mail_imap_mcp.config import AccountConfig, Config
from mail_imap_mcp.config.faults import how_to_allow_writes, how_to_turn_on
from mail_imap_mcp.config.rules_settings import rules_unavailable
from mail_imap_mcp.config.switches import (
    DOWNLOAD_DIR,
    INDEX,
    INDEX_MEANING,
    RULES_ENABLED,
    SEND_ENABLED,
    UNSUBSCRIBE_ENABLED,
    WRITE_ENABLED,
    Switch,
)
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.mail.sieve_presence import SIEVE_PRESENCE
from mail_imap_mcp.meaning.model import found_reason, missing_setting, unavailable_reason


class Effect(StrEnum):
    """What a tool does to the user's mail; decides its MCP annotations."""

    READ = "read"
    #: Changes mail, but nothing is lost (flags, copy, create a mailbox, save a draft).
    WRITE = "write"
    #: Moves or removes something (move, delete, rename, delete a mailbox).
    DESTRUCTIVE = "destructive"
    #: Sends mail: gated by the account's send_enabled alone (write_enabled neither allows nor lists it).
    SEND = "send"


class SurfaceGroup(StrEnum):
    """A part of the tool surface a configuration turns on as a whole; its budget is the sum of the
    shares of its capabilities that have tools."""

    READS = "reads"
    WRITES = "writes"
    SENDING = "sending"


@dataclass(frozen=True)
class Refusal:
    """A capability the account does not allow: the setting that would (``field``: the MCP Bundle form's
    label of it, where the form sets it) and what the user does."""

    account_id: str
    setting: str
    message: str
    field: str | None = None
    #: ``unavailable`` where a setting it needs is missing rather than off (no SMTP server).
    code: ErrorCode = ErrorCode.PERMISSION_DENIED

    def failure(self) -> ToolFailure:
        details = {"account_id": self.account_id, "setting": self.setting}
        return ToolFailure(
            self.code,
            self.message,
            details=details if self.field is None else {**details, "field": self.field},
            retryable=False,
        )


def _switched_off(switched: Capability, config: Config, account_id: str) -> Refusal:
    """The refusal of ``switched`` where its switch is off, naming the setting (any capability's, unless it
    words its own)."""
    switch = switched.setting
    assert switch is not None, "a capability without a switch is never off"
    if switch.scope == "server":
        return Refusal(
            account_id,
            switch.key,
            f"{switched.name.capitalize()} is turned off; nothing was done. Only the user can turn it on, "
            f"with {switch.key} in [server].",
        )
    account = config.accounts[account_id]
    return Refusal(
        account_id,
        switch.key,
        f"{switched.name.capitalize()} is turned off for account {account_id!r}; nothing was done. Only the "
        f"user can turn it on ({account.named(switch.key)}).",
        account.label(switch.key),
    )


@dataclass(frozen=True)
class Capability:
    """One capability: ``setting`` turns it on (None: always on), ``group`` and ``share`` its bytes of the
    tool surface, ``checked`` where its gate runs (``call``: the registry, before the tool, on the account
    its arguments name; ``connection``: the call's ``write_connection``, the write tool's first step, which
    runs its tool's own capability's gate). Its gate refuses wherever its switch is off, whatever the
    switch's scope: with ``refused`` (words of its own) or the refusal any capability gets."""

    name: str
    effect: Effect
    group: SurfaceGroup
    share: int
    setting: Switch | None
    checked: Literal["call", "connection"]
    _: KW_ONLY
    #: Listed where any configured account allows it (False: any account the caller may use).
    listed_for_everyone: bool = True
    #: Changes something besides mail (a file on the user's computer): a tool listing it is not read-only.
    changes_beyond_mail: bool = False
    #: Using it twice with the same arguments changes no more than using it once.
    idempotent: bool = True
    #: Its refusal where its switch is off, in words of its own.
    refused: Callable[[Capability, Config, str], Refusal] = _switched_off
    #: What it needs besides its switch (sending: an SMTP server): the refusal where that is missing.
    requires: Callable[[Config, str], Refusal | None] | None = None
    #: Not listed where :attr:`requires` refuses, as where its switch is off (search by meaning without an
    #: index: nothing to rank); False: listed, and refused when used (sending without an SMTP server).
    listed_with_requirement: bool = False
    #: What listing checks in place of :attr:`requires` where that reads something costly (search by
    #: meaning: the model's files are checked as far as a read needs them, its table is read by the call
    #: that needs it).
    listed_requires: Callable[[Config, str], Refusal | None] | None = None
    #: Capabilities any one of which turns it on, in place of a switch of its own (following a background
    #: operation: writing and sending both start one).
    on_with_any: tuple[Capability, ...] = ()

    @property
    def writes(self) -> bool:
        return self.effect is not Effect.READ

    @property
    def changes_anything(self) -> bool:
        """Whether it changes the user's environment (MCP's readOnlyHint false): mail, or beyond it."""
        return self.writes or self.changes_beyond_mail

    @property
    def checked_at_call(self) -> bool:
        return self.checked == "call"

    @property
    def scope(self) -> Literal["account", "server"] | None:
        """Where its switch lives (None: it has none)."""
        return None if self.setting is None else self.setting.scope

    def gate(self, config: Config, account_id: str) -> None:
        """Return when :meth:`permits` allows it; else raise its refusal (``permission_denied``)."""
        refusal = self.permits(config, account_id)
        if refusal is not None:
            raise refusal.failure()

    def annotations(self, idempotent: bool) -> dict[str, Any]:
        """The MCP tool annotations (``readOnlyHint``, ``destructiveHint``, ...) of a tool of it."""
        return {
            "readOnlyHint": not self.changes_anything,
            "destructiveHint": self.effect is Effect.DESTRUCTIVE,
            "idempotentHint": idempotent,
            "openWorldHint": True,
        }

    def allows(self, config: Config, account_id: str) -> bool:
        """Whether its switch is on for ``account_id`` (an account's unset: ``[server]``'s of its key)."""
        if self.on_with_any:
            return any(other.allows(config, account_id) for other in self.on_with_any)
        switch = self.setting
        if switch is None:
            return True
        if switch.scope == "server":
            return bool(getattr(config.server, switch.key))
        own = getattr(config.accounts[account_id], switch.key)
        return bool(getattr(config.server, switch.key, False) if own is None else own)

    def on(self, config: Config, user: str) -> bool:
        """Whether its tools are listed for ``user`` (``config``: everything configured)."""
        if self.on_with_any:
            return any(other.on(config, user) for other in self.on_with_any)
        return any(
            self.allows(config, account_id)
            and (self.listed_for_everyone or account.serves(user))
            and not (self.listed_with_requirement and self._listing_refuses(config, account_id))
            for account_id, account in config.accounts.items()
        )

    def _listing_refuses(self, config: Config, account_id: str) -> bool:
        needs = self.listed_requires or self.requires
        return needs is not None and needs(config, account_id) is not None

    def permits(self, config: Config, account_id: str) -> Refusal | None:
        """None when it may be used on ``account_id`` (``config``: the caller's view, their accounts
        only); else the refusal naming the setting that would allow it."""
        if not self.allows(config, account_id):
            return self.refused(self, config, account_id)
        return None if self.requires is None else self.requires(config, account_id)


def _writes_refused(_: Capability, config: Config, account_id: str) -> Refusal:
    how, field = how_to_allow_writes(config.accounts[account_id])
    return Refusal(
        account_id,
        "write_enabled",
        f"Writes are turned off for account {account_id!r}; nothing was changed. To allow them, the user {how}.",
        field.get("field"),
    )


def _sending_refused(_: Capability, config: Config, account_id: str) -> Refusal:
    account = config.accounts[account_id]
    return Refusal(
        account_id,
        "send_enabled",
        f"Sending is turned off for account {account_id!r}; nothing was sent. Only the user can turn it on "
        f"({account.named('send_enabled')} with {account.named('allowed_recipients')}).",
        account.label("send_enabled"),
    )


def _submission_missing(config: Config, account_id: str) -> Refusal | None:
    """Sending's need besides its switch: a submission server (reading works without one; sending names
    the setting to fill in)."""
    account = config.accounts[account_id]
    if account.submission is not None:
        return None
    return Refusal(
        account_id,
        account.setting("smtp_host"),
        f"Account {account_id!r} has no SMTP submission server (none is known for its domain); nothing "
        f"was sent. The user enters it: {account.named('smtp_host')}.",
        account.label("smtp_host"),
        ErrorCode.UNAVAILABLE,
    )


READING = Capability("reading", Effect.READ, SurfaceGroup.READS, 8000, None, "call")
#: Bytes of issue 60's 800 that acting on a search takes (``query``, ``mailbox``, ``account_id`` and
#: ``undo`` of imap_update_message_flags and imap_apply_to_messages): half in each tool's capability.
ACTING_ON_A_SEARCH = 540
#: Writing and destructive writing share one switch and one budget (13,540 B with reads; draft contents
#: add theirs).
#: Bytes of writing's 5,000 that following and stopping a background operation take (imap_get_operation and
#: imap_cancel_operation, 704 today): they are listed with sending too.
FOLLOWING_SHARE = 710
WRITING = Capability(
    "writing",
    Effect.WRITE,
    SurfaceGroup.WRITES,
    5000 - FOLLOWING_SHARE + ACTING_ON_A_SEARCH // 2,
    WRITE_ENABLED,
    "connection",
    refused=_writes_refused,
)
DESTRUCTIVE_WRITING = replace(
    WRITING, name="destructive writing", effect=Effect.DESTRUCTIVE, share=ACTING_ON_A_SEARCH // 2
)
SENDING = Capability(
    "sending",
    Effect.SEND,
    SurfaceGroup.SENDING,
    700,
    SEND_ENABLED,
    "call",
    listed_for_everyone=False,
    refused=_sending_refused,
    requires=_submission_missing,
)
#: Stopping a background operation (imap_cancel_operation): what was started was gated when it started,
#: and a send waiting for the user's approval (sending without writing) must stay stoppable; so no switch of
#: its own. Its bytes are in following's share.
STOPPING = Capability("stopping an operation", Effect.WRITE, SurfaceGroup.WRITES, 0, None, "call")


def _nothing_to_follow(_: Capability, config: Config, account_id: str) -> Refusal:
    return Refusal(
        account_id,
        WRITE_ENABLED.key,
        f"Nothing runs in the background for account {account_id!r}: writes ({WRITE_ENABLED.key}) and sending "
        f"({SEND_ENABLED.key}) are turned off, and only they start one.",
    )


#: Following and stopping a background operation (imap_get_operation and imap_cancel_operation) where
#: one can start: writing (a long write) or sending (a send waiting for the user's approval on its page,
#: whose answer names imap_get_operation) is on. The tools' own capabilities gate their calls.
FOLLOWING = Capability(
    "following an operation",
    Effect.READ,
    SurfaceGroup.WRITES,
    FOLLOWING_SHARE,
    None,
    "call",
    on_with_any=(WRITING, SENDING),
    refused=_nothing_to_follow,
)
#: Saving an attachment to the user's download_dir (imap_get_attachment's ``save``): its argument is in
#: the tool's schema only where the folder is set; it changes no mail, but adds a file (a new name each
#: time, never overwriting) on the user's computer. Within issue 60's 800 bytes.
SAVING_ATTACHMENTS = Capability(
    "saving attachments",
    Effect.READ,
    SurfaceGroup.WRITES,
    120,
    DOWNLOAD_DIR,
    "call",
    changes_beyond_mail=True,
    idempotent=False,
)
#: What a draft may carry besides its text (imap_save_draft's ``attachments`` and ``bcc``, and
#: ``forward_of``, ``forward_as`` and ``reply_to_invitation``): gated arguments of the draft tool, on with
#: writes (issue 59's 900 bytes).
DRAFT_CONTENTS = replace(
    WRITING, name="forwarding, attachments and invitation replies", share=900, checked="call"
)
#: Leaving mailing lists with the user's approval (``action: "unsubscribe"`` of imap_apply_to_messages, a
#: value of its enum listed only where this is on): the one web request the server makes, so a switch of
#: its own, off by default.
UNSUBSCRIBING = Capability(
    "unsubscribing", Effect.WRITE, SurfaceGroup.WRITES, 15, UNSUBSCRIBE_ENABLED, "call"
)


def _meaning_refused(_: Capability, config: Config, account_id: str) -> Refusal:
    account = config.accounts[account_id]
    return Refusal(
        account_id,
        INDEX_MEANING.key,
        f"Search by meaning (about, like) is turned off for account {account_id!r}. Only the user can turn it "
        f"on ({account.named(INDEX_MEANING.key)}).",
        account.label(INDEX_MEANING.key),
        ErrorCode.INVALID_INPUT,
    )


def _meaning_needs(config: Config, account_id: str) -> Refusal | None:
    """Search by meaning's needs besides its switch: the account's index (which keeps the vectors), and
    the model that makes them, able to run here (the ``meaning`` extra, or ``[index] meaning_model_dir``)."""
    return _meaning_missing(config, account_id, unavailable_reason)


def _meaning_listed(config: Config, account_id: str) -> Refusal | None:
    """:func:`_meaning_needs` as far as the model's files tell without reading its table: listing the
    tools reads none (:func:`~mail_imap_mcp.meaning.model.found_reason`)."""
    return _meaning_missing(config, account_id, found_reason)


def _meaning_missing(
    config: Config, account_id: str, model_missing: Callable[[Config], str | None]
) -> Refusal | None:
    if not config.indexed(account_id):
        how, field = how_to_turn_on(config.accounts[account_id], INDEX)
        return Refusal(
            account_id,
            INDEX.key,
            f"Search by meaning (about, like) ranks the local index, which account {account_id!r} does not "
            f"keep. Only the user can turn it on: the user {how}.",
            field.get("field"),
            ErrorCode.INVALID_INPUT,
        )
    why = model_missing(config)
    if why is not None:
        return Refusal(  # what would let it run: the model's directory, or the extra that ships one
            account_id,
            missing_setting(config),
            f"Search by meaning (about, like) cannot run here: {why}.",
            code=ErrorCode.INVALID_INPUT,
        )
    return None


#: Ranking mail by meaning (imap_search_messages's ``about`` and ``like``): arguments listed only where an
#: account's index keeps vectors (its switch, the index and the model's extra).
SEARCHING_BY_MEANING = Capability(
    "searching by meaning",
    Effect.READ,
    SurfaceGroup.READS,
    300,
    INDEX_MEANING,
    "call",
    refused=_meaning_refused,
    requires=_meaning_needs,
    listed_with_requirement=True,
    listed_requires=_meaning_listed,
)


def rules_missing(account: AccountConfig) -> str | None:
    """Why ``account`` runs no rules managed here (None: it may): a provider without ManageSieve, or a server
    this process found offers none (``mail/sieve_presence.py``: Courier)."""
    endpoint = account.sieve.endpoint(account.host)
    found = SIEVE_PRESENCE.absent((endpoint.host, endpoint.port))
    return rules_unavailable(account.provider, account.sieve) or found


def _no_managesieve(config: Config, account_id: str) -> Refusal | None:
    """Rules' need besides their switch: a server that offers ManageSieve (not Gmail, iCloud, Courier...)."""
    account = config.accounts[account_id]
    why = rules_missing(account)
    message = (
        f"Rules cannot be managed on account {account_id!r}: {why}; nothing was changed. Where it has a "
    )
    named = f"ManageSieve server elsewhere, the user names it ({account.named('sieve_host')})."
    return None if why is None else Refusal(account_id, account.setting("sieve_host"), message + named,
                                            code=ErrorCode.UNSUPPORTED)  # fmt: skip


#: Rules the server runs as mail arrives (imap_manage_rules, Sieve over ManageSieve): listed where
#: ``rules_enabled`` is on and the server may offer ManageSieve (``rules_missing``; issue 91's 900 B).
RULES = Capability("rules", Effect.DESTRUCTIVE, SurfaceGroup.WRITES, 900, RULES_ENABLED, "call",
                   listed_for_everyone=False, idempotent=False, requires=_no_managesieve,
                   listed_with_requirement=True)  # fmt: skip
#: Every capability with tools (or arguments of a tool) today.
CAPABILITIES = (
    READING,
    WRITING,
    DESTRUCTIVE_WRITING,
    SENDING,
    STOPPING,
    FOLLOWING,
    SAVING_ATTACHMENTS,
    DRAFT_CONTENTS,
    UNSUBSCRIBING,
    SEARCHING_BY_MEANING,
    RULES,
)

#: The next issues' shares, held for them now (bytes, in the writes group): none. Issue 60 asked 800 bytes for
#: saving attachments, acting on a search and unsubscribing; they measure 115, 532 and 24 (the enum value, 14,
#: and destination_mailbox's word for it, 10, within writing's share): 675 declared.
PLANNED_SHARES: dict[str, int] = {}


def budget(listed: Iterable[Capability]) -> int:
    """The surface budget, in bytes, of a configuration that lists the tools of ``listed``: the sum of
    their shares."""
    return sum(capability.share for capability in set(listed))


#: Bytes with writes off (instructions and the read tools) ...
READ_ONLY_BUDGET = budget([READING])
#: ... and with writes on (every tool but sending listed, and what a draft may carry).
WRITES_BUDGET = budget([READING, WRITING, DESTRUCTIVE_WRITING, FOLLOWING, DRAFT_CONTENTS])
