"""``[server]`` settings, and the whole validated :class:`Config` (``[http]``: :mod:`.http_settings`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .accounts import ACCOUNT_ID_PATTERN, AccountConfig
from .http_settings import HttpSettings
from .index_settings import IndexSettings
from .local_files import AttachmentDirs, DownloadDir
from .team import StateSettings

#: The largest window of bytes one call returns (imap_get_message_raw, imap_get_attachment's bytes): its
#: base64, 76,460 characters, stays within a tool result's 80,000 (presentation/result_size.py).
MAX_WINDOW_BYTES = 57_344
#: The largest window of text one call returns (a body, an attachment's text).
MAX_WINDOW_CHARS = 60_000


def _byte_limit(default: int, description: str) -> Any:
    """A ``[server]`` limit in bytes: from 64 KiB to 1 GiB."""
    return Field(default=default, ge=64 * 1024, le=1024 * 1024 * 1024, description=description)


class ServerSettings(BaseModel):
    """``[server]``: switches and the limits that bound every response."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    write_enabled: bool = Field(
        default=False,
        description="Allow write tools on every account that does not set its own write_enabled. "
        "When no account allows writes, write tools are not even listed.",
    )
    audit_file: Path | None = Field(
        default=None,
        description="Append one JSON line per write (time, request id, user, tool, account, action, "
        "message count, outcome; never content) to this file, besides the log line on stderr. With "
        "[http.auth] the user is the name the access token gives (an email address with user_claim = "
        "email), and a per_user account's line says whose mailbox it was (mailbox_of).",
    )
    state_dir: Path | None = Field(
        default=None,
        description="Where the server keeps the key that seals search cursors and changes tokens (file "
        "seal.key, made on first start, mode 0600), so they stay valid across restarts and processes "
        "with this configuration, and, without [state] redis_url, the record of sends (records.sqlite3: "
        "each draft sent at most once by every process of the machine, across restarts). Default: "
        "$XDG_STATE_HOME/mail-imap-mcp (~/.local/state/mail-imap-mcp; %LOCALAPPDATA%\\mail-imap-mcp on "
        "Windows). Unwritable: cursors end with the process, and sends are refused.",
    )
    index: bool = Field(
        default=False,
        description="Keep a local full-text index (SQLite FTS5) of every account that does not set its own "
        "index: searches with a query are answered from it, ranked, after one round trip that brings it "
        "up to date (docs/index.md). Off by default.",
    )
    index_dir: Path | None = Field(
        default=None,
        description="Where the index files are kept (one per account and login, <account>.<tag>.sqlite3, mode 0600, in a "
        "directory of mode 0700). Default: the platform's user data directory (~/.local/share/"
        "mail-imap-mcp/index on Linux, ~/Library/Application Support/mail-imap-mcp/index on macOS, "
        "%LOCALAPPDATA%\\mail-imap-mcp\\index on Windows).",
    )
    index_text_bytes: int = Field(
        default=4096,
        ge=512,
        le=1_048_576,
        description="Bytes of each message's body read into the index (its start: the text part, or the "
        "HTML part as text).",
    )
    index_attachments: bool = Field(
        default=False,
        description="With the index on, also index the text of document attachments (PDF, Office, "
        "OpenDocument, calendar, CSV, plain text), extracted in the same sandbox as imap_get_attachment "
        "reads them, the first 16,384 characters per message. Off by default: it fetches and parses "
        "attachments, far more than the text the index reads otherwise.",
    )
    index_meaning: bool = Field(
        default=True,
        description="With the index on and the meaning extra installed, also keep vectors of what each "
        "message says, made by a local model (nothing leaves the machine), so that imap_search_messages "
        "ranks by meaning (about, like) as well as by words (docs/search.md).",
    )
    index_attachment_bytes: int = Field(
        default=2_097_152,
        ge=4096,
        le=67_108_864,
        description="With index_attachments: most bytes of attachments fetched per message (as sent, "
        "encoded). A document larger than what is left is not read (a cut PDF or Office file cannot be "
        "parsed); a text or CSV attachment is read up to it.",
    )
    index_fresh_budget_ms: int = Field(
        default=1500,
        ge=0,
        le=60_000,
        description="How long a search may spend bringing the index up to date before it answers (new "
        "mail, flags, expunges); past it the answer says how stale it is in meta.warnings.",
    )
    index_fresh_from_push: bool = Field(
        default=False,
        description="Let each indexed account keep one more connection, with NOTIFY (RFC 5465), whose NOOP "
        "stands in for the STATUS of every folder before a search (docs/index.md); it vouches for 30 s after "
        "a STATUS of every folder, then asks them again (a search answered on counts checked over 5 s "
        "before says so in its warnings). Only where the server "
        "offers NOTIFY and CONDSTORE and flushes its notifications on NOOP (Dovecot), and all mail reaches "
        "the mailboxes through the server (IMAP, LMTP, its delivery agent), never as files written into "
        "its store behind its back, which NOTIFY does not tell.",
    )
    allow_permanent_delete: bool = Field(
        default=False,
        description="Allow imap_apply_to_messages to expunge (permanent: true, after confirmation); "
        "otherwise deleting moves messages to Trash.",
    )
    bulk_approval_threshold: int = Field(
        default=25,
        ge=0,
        le=1_000_000,
        description="A move or delete of every message a search finds (`query` in imap_apply_to_messages) "
        "of more messages than this, with those the caller moved by search unasked in the last 10 minutes, "
        "asks the user once, showing the count, the search and a sample.",
    )
    confirm_without_elicitation: bool = Field(
        default=False,
        description="Let a permanent delete be confirmed with a token the agent passes on, for clients "
        "without MCP elicitation. Off, only the user confirms it, through the client; such clients are "
        "refused. A token guards against an agent's mistake, not against an agent that was talked into "
        "deleting (it can pass the token on itself).",
    )
    max_mailboxes: int = Field(
        default=1000, ge=1, le=100_000, description="Most mailboxes one imap_list_mailboxes call returns."
    )
    max_search_limit: int = Field(
        default=100, ge=1, le=1000, description="Upper bound for imap_search_messages `limit`."
    )
    max_snippet_chars: int = Field(default=500, ge=0, le=5000, description="Upper bound for `snippet_chars`.")
    max_body_chars: int = Field(
        default=MAX_WINDOW_CHARS, ge=100, le=MAX_WINDOW_CHARS, description="Upper bound for `body_max_chars`."
    )
    max_raw_bytes: int = Field(
        default=MAX_WINDOW_BYTES,
        ge=1024,
        le=MAX_WINDOW_BYTES,
        description="Upper bound for imap_get_message_raw and imap_get_attachment `max_bytes`.",
    )
    keepalive_interval_s: float = Field(
        default=240.0,
        ge=0,
        le=1740,
        description="Send NOOP on an account's connection after it sat idle this many seconds, so a "
        "server's idle logout or a NAT router does not drop it and the next call needs no reconnect; "
        "0 turns it off. The default stays below common NAT timeouts (5 minutes) and IMAP's 30.",
    )
    max_watch_connections: int = Field(
        default=3,
        ge=1,
        le=50,
        description="Most IMAP connections per account that watch subscribed mailboxes (resources/subscribe "
        "of imap://<account>/mailbox/<mailbox>), each of its own, never the one serving tool calls. A "
        "connection watches one mailbox with IDLE (or NOOP polling where the server has no IDLE); past "
        "this many mailboxes, connections are shared: told of changes by NOTIFY where the server "
        "offers it, else checking each of their mailboxes with STATUS every watch_poll_interval_s.",
    )
    watch_poll_interval_s: float = Field(
        default=10.0,
        ge=0.2,
        le=3600,
        description="How often a watched mailbox is checked where IDLE cannot be used: the server has no "
        "IDLE (NOOP on the examined mailbox), or the mailbox shares a connection with others and the "
        "server has no NOTIFY (STATUS). A change is reported within this delay there, within a second "
        "or two with IDLE.",
    )
    watch_idle_restart_s: float = Field(
        default=1500.0,
        ge=1,
        le=1740,
        description="Re-issue IDLE on a watching connection after this many seconds (examining the "
        "mailbox anew), before a server's inactivity timeout ends it (RFC 2177: at most 29 minutes); "
        "a connection that no longer answers, or a mailbox deleted where IDLE did not say so, is found "
        "out then at the latest.",
    )
    summary_cache_entries: int = Field(
        default=2000,
        ge=0,
        le=100_000,
        description="Search-result summaries kept per account for messages already seen, so a page "
        "seen before is answered from the server's flags alone (a message's content never changes "
        "under its UID); 0 keeps none. An entry is typically under 1 KB plus its snippet; whatever "
        "this allows, the kept summaries of an account hold at most 4 million characters of text.",
    )
    max_text_part_bytes: int = Field(
        default=2_000_000,
        ge=10_000,
        le=50_000_000,
        description="Most bytes fetched from one text part; larger parts are read in part and flagged.",
    )
    max_attachment_bytes: int = _byte_limit(
        25 * 1024 * 1024,
        "Most decoded bytes of one attachment the server reads (fetched in chunks into a "
        "temporary file, never whole into memory); a document or image beyond it is limit_exceeded, "
        "text beyond it is cut and flagged, bytes windows must end within it.",
    )
    max_send_bytes: int = _byte_limit(
        25 * 1024 * 1024,
        "Most bytes of a draft sent (imap_send_draft) or, on an account that sends, saved "
        "(imap_save_draft), where the submission server states no SIZE; its SIZE rules where it does.",
    )
    extract_timeout_s: float = Field(
        default=20.0,
        gt=0,
        le=600,
        description="Wall-clock limit for extracting one document's text (PDF, Office, ODF, calendar) in "
        "the sandboxed child process; its CPU time is limited to the same.",
    )
    extract_memory_mb: int = Field(
        default=512,
        ge=64,
        le=16_384,
        description="Memory limit of the sandboxed extraction process, in MiB: its address space "
        "(RLIMIT_AS) where the platform enforces it, its resident memory watched by the server elsewhere "
        "(Windows, macOS).",
    )
    max_attachment_text_chars: int = Field(
        default=MAX_WINDOW_CHARS,
        ge=1000,
        le=MAX_WINDOW_CHARS,
        description="Upper bound for imap_get_attachment `max_chars` and imap_get_message "
        "`attachment_text_max_chars`.",
    )
    max_image_pixels: int = Field(
        default=50_000_000,
        ge=10_000,
        le=500_000_000,
        description="Largest image (width x height) opened for imap_get_attachment mode=image; a bigger "
        "one (a decompression bomb, or simply huge) is limit_exceeded.",
    )
    image_max_dimension: int = Field(
        default=1568,
        ge=64,
        le=8192,
        description="Images are downscaled so that neither side exceeds this many pixels.",
    )
    max_image_output_bytes: int = Field(
        default=1_500_000,
        ge=50_000,
        le=20_000_000,
        description="Most bytes of the image block imap_get_attachment returns (re-encoded smaller "
        "when needed, else limit_exceeded).",
    )
    max_resource_bytes: int = _byte_limit(
        10 * 1024 * 1024,
        "Largest attachment served whole as an MCP resource (attachment resource_uri); "
        "larger ones are read with imap_get_attachment windows.",
    )
    background_after_s: float = Field(
        default=1.5,
        ge=0,
        le=60,
        description="How long a bulk write answers inline; past it, it continues in the background and "
        "imap_get_operation follows it (0: always in the background).",
    )
    request_state_ttl_s: float = Field(
        default=600.0,
        ge=1,
        le=3600,
        description="How long a user has to answer a question a tool asks in its result (clients of the "
        "2026-07-28 protocol): the lifetime of the call's request_state under both its seals, this "
        "server's and the MCP SDK's, keyed by the key that seals cursors (state_dir, or [state] "
        "redis_url's shared one) and renewed every lifetime (docs/team.md).",
    )
    attachment_dirs: AttachmentDirs = ()
    download_dir: DownloadDir = None
    unsubscribe_enabled: bool = Field(
        default=False,
        description='imap_apply_to_messages\'s action "unsubscribe" (with writes on): leave the mailing lists '
        "of given messages, or of a search's, once the user approves, moving them in the same approval "
        "(one HTTPS POST where the list offers RFC 8058 one-click under a verified DKIM signature, else a "
        "mailto draft sent only through imap_send_draft). Off: the server makes no web request.",
    )


class Config(BaseModel):
    """The whole configuration: accounts by id, and server settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    accounts: dict[str, AccountConfig] = Field(default_factory=dict)
    server: ServerSettings = Field(default_factory=ServerSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    state: StateSettings = Field(default_factory=StateSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)

    def writes_allowed(self, account_id: str) -> bool:
        """Whether write tools may change mail of ``account_id``."""
        own = self.accounts[account_id].write_enabled
        return self.server.write_enabled if own is None else own

    def indexed(self, account_id: str) -> bool:
        """Whether ``account_id`` keeps a local full-text index."""
        own = self.accounts[account_id].index
        return self.server.index if own is None else own

    def attachments_indexed(self, account_id: str) -> bool:
        """Whether ``account_id``'s index also holds the text of its attachments."""
        own = self.accounts[account_id].index_attachments
        return self.server.index_attachments if own is None else own

    def meaning_indexed(self, account_id: str) -> bool:
        """Whether ``account_id``'s index is to keep vectors for search by meaning (where the model can
        run: :func:`mail_imap_mcp.meaning.model.model_for`)."""
        own = self.accounts[account_id].index_meaning
        return self.indexed(account_id) and (self.server.index_meaning if own is None else own)

    @model_validator(mode="after")
    def _check_ids(self) -> Config:
        for account_id in self.accounts:
            if not re.match(ACCOUNT_ID_PATTERN, account_id):
                raise ValueError(
                    f"account id {account_id!r} must match {ACCOUNT_ID_PATTERN} (letters, digits, _ and -)"
                )
        for account_id, account in self.accounts.items():
            if account._env_prefix is None:
                account._file_section = f"accounts.{account_id}"
            if self.http.auth is not None and account.users is None and not account.per_user:
                raise ValueError(
                    f"[http.auth] signs users in: say whose account {account_id!r} is, with users = "
                    f'["name@example.com", ...] or per_user = true in [accounts.{account_id}]'
                )
        return self
