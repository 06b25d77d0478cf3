"""``mail-imap-mcp index [--account ID] [--drop [--user NAME] | --status]``: build or update the local
index, delete it (with ``--user``, one team user's index of an account with ``index_per_user``), or list
each index's state (its place, messages, folders built; its team users' indexes too), in either engine.

A progress bar (tqdm: messages, folders, MB, rate, ETA) when stderr is a terminal, a plain line every few
seconds otherwise. Killed at any point, the next run continues from the last committed batch.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from functools import partial

from tqdm import tqdm

from mail_imap_mcp.config import Config
from mail_imap_mcp.index.engine import IndexEngine
from mail_imap_mcp.index.engines import open_engine
from mail_imap_mcp.index.store import IndexPermissions, IndexUnusable, IndexWriteFailed
from mail_imap_mcp.mail.errors import MailError
from mail_imap_mcp.mail.sealing_store import open_sealing_store
from mail_imap_mcp.state import StateUnavailable, fold_user

#: Seconds between the plain progress lines when stderr is not a terminal.
PLAIN_EVERY_S = 5.0


class _Progress:
    """The bar on a terminal, plain lines elsewhere."""

    def __init__(self, account_id: str) -> None:
        self.account_id = account_id
        self.tty = sys.stderr.isatty()
        self.bar: tqdm[None] | None = None
        self.folders = 0
        self.folder = 0
        self.messages = 0
        self.total = 0
        self.bytes = 0
        self.started = time.monotonic()
        self.last_line = 0.0

    def plan(self, folders: int, messages: int) -> None:
        self.folders, self.total = folders, messages
        self.started = time.monotonic()
        if self.tty:
            self.bar = tqdm(
                total=messages,
                unit="msg",
                desc=self.account_id,
                file=sys.stderr,
                dynamic_ncols=True,
                postfix=self._where(),  # from its first drawing: folders and MB beside messages and rate
            )
        else:
            self._line(f"{folders} folder(s), {messages} message(s) to index")

    def _where(self) -> str:
        return f"folder {self.folder}/{self.folders}, {self.bytes / 1e6:.1f} MB"

    def enter(self, number: int, name: str) -> None:
        self.folder = number
        if self.bar is not None:
            self.bar.set_postfix_str(self._where())

    def advance(self, folder: str, messages: int, size: int) -> None:
        self.messages += messages
        self.bytes += size
        if self.bar is not None:
            self.bar.set_postfix_str(self._where(), refresh=False)
            self.bar.update(messages)
        elif time.monotonic() - self.last_line >= PLAIN_EVERY_S:
            self._status()

    def _status(self) -> None:
        elapsed = max(time.monotonic() - self.started, 1e-6)
        rate = self.messages / elapsed
        eta = (self.total - self.messages) / rate if rate else 0.0
        self._line(
            f"{self.messages}/{self.total} messages, folder {self.folder}/{self.folders}, "
            f"{self.bytes / 1e6:.1f} MB, {rate:.0f} msg/s, ETA {eta:.0f} s"
        )

    def _line(self, text: str) -> None:
        self.last_line = time.monotonic()
        print(f"index {self.account_id}: {text}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.total:
            self._status()


#: A domain error in the tools' words (``cli.py`` passes the failure registry's: the CLI's one boundary).
Words = Callable[[MailError], str]


def run_index(
    config: Config,
    account: str | None,
    *,
    drop: bool,
    words: Words,
    user: str | None = None,
    status: bool = False,
) -> int:
    """Build (or with ``drop`` delete, with ``status`` list) the index of ``account`` or of every account
    that keeps one; deleting or listing, also its team users' indexes (``user``: that user's alone)."""
    if account is not None and account not in config.accounts:
        print(f"mail-imap-mcp index: no account {account!r} in the configuration", file=sys.stderr)
        return 2
    if status and (drop or user is not None):
        print(
            "mail-imap-mcp index: --status lists the indexes: give it without --drop and --user",
            file=sys.stderr,
        )
        return 2
    if user is not None:
        if not drop or account is None:
            print(
                "mail-imap-mcp index: --user deletes a team user's index: give --drop and --account",
                file=sys.stderr,
            )
            return 2
        return _drop_users_index(config, account, user)
    listing = drop or status
    kept = [a for a in sorted(config.accounts) if config.indexed(a) or (listing and _per_user(config, a))]
    chosen = [account] if account else kept
    if not listing and account is not None and not config.indexed(account):
        setting = config.accounts[account].setting("index", "true")
        print(f"mail-imap-mcp index: the index is off for {account!r}; set {setting} first", file=sys.stderr)
        return 2
    if not chosen:
        print("mail-imap-mcp index: no account keeps an index; set index = true in [server] or an account")
        return 2
    failures = 0
    engine = open_engine(config)
    try:
        for account_id in chosen:
            if drop:
                _drop_one(engine, config, account_id)
                continue
            if status:
                failures += _list_one(engine, config, account_id)
                continue
            failures += _build_one(engine, config, account_id, words)
    finally:
        engine.close()
    return 1 if failures else 0


def _drop_one(engine: IndexEngine, config: Config, account_id: str) -> None:
    """Delete ``account_id``'s index and those of its team users."""
    location = engine.location(account_id, config.accounts[account_id])
    removed = location.drop()
    print(f"index {account_id}: {'deleted ' if removed else 'no index at '}{location.where}")
    users = engine.user_locations(account_id)
    for user_location in users:
        user_location.drop()
    if users:
        print(f"index {account_id}: deleted the indexes of {len(users)} team user(s)")


def _list_one(engine: IndexEngine, config: Config, account_id: str) -> int:
    """Print the state of ``account_id``'s index and of its team users' (1: one could not be read)."""
    failures = 0
    own = engine.location(account_id, config.accounts[account_id])
    try:
        places = ([own] if own.exists() else []) + engine.user_locations(account_id)
    except (IndexWriteFailed, IndexUnusable) as exc:  # the database out of reach
        print(f"index {account_id}: {exc}", file=sys.stderr)
        return 1
    if not places:
        print(f"index {account_id}: no index at {own.where}")
    for location in places:
        whose = "" if location is own else "team user's index, "
        try:
            store = location.open().store
        except (IndexPermissions, IndexUnusable, IndexWriteFailed, OSError) as exc:
            print(f"index {account_id}: {whose}{location.where}: {exc}", file=sys.stderr)
            failures = 1
            continue
        try:
            folders = store.folders()
            count = store.count()
            # Where the engine keeps vectors more than one way (PostgreSQL: pgvector, or a table), which.
            layout = getattr(store, "vector_layout", None)
            meaning = f"; {layout()}" if layout is not None and config.meaning_indexed(account_id) else ""
        finally:
            store.close()
        built = sum(1 for state in folders.values() if state.complete)
        state = (
            "built"
            if folders and built == len(folders)
            else "not fully built (a server or this command goes on)"
        )
        print(
            f"index {account_id}: {whose}{location.where}: {count} message(s), {built} of {len(folders)} "
            f"folder(s) built; {state}{meaning}"
        )
    return failures


def _per_user(config: Config, account_id: str) -> bool:
    return config.accounts[account_id].index_per_user


def _drop_users_index(config: Config, account_id: str, user: str) -> int:
    """Delete ``user``'s index of ``account_id``: its file is named by a digest of the name (folded as
    the server folds the token's, :func:`~mail_imap_mcp.state.fold_user`) under the key that seals
    cursors, read as the server reads it (the state directory, or Redis with ``[state]``)."""
    try:
        open_sealing_store(config).close()
    except StateUnavailable as exc:
        print(f"mail-imap-mcp index: [state] redis_url: {exc.detail}", file=sys.stderr)
        return 1
    auth = config.http.auth
    engine = open_engine(config)
    try:
        location = engine.location(
            account_id, config.accounts[account_id], fold_user(user, auth.user_claim if auth else "")
        )
        removed = location.drop()
    finally:
        engine.close()
    print(f"index {account_id}: {'deleted' if removed else 'no index of'} the user's index {location.where}")
    return 0


def _build_one(engine: IndexEngine, config: Config, account_id: str, words: Words) -> int:
    # A build's machinery (the IMAP connection, the sync, the meaning model) loads with a build: ``--status``
    # and ``--drop`` read and delete files only.
    from mail_imap_mcp.credentials.logins import credentials_for
    from mail_imap_mcp.imap.connection import AccountConnection
    from mail_imap_mcp.index.attachments import AttachmentReading
    from mail_imap_mcp.index.build import BuildHooks, build
    from mail_imap_mcp.index.sync import Indexer
    from mail_imap_mcp.index.sync_vectors import build_beside
    from mail_imap_mcp.meaning.model import model_for

    location = engine.location(account_id, config.accounts[account_id])
    try:
        opened = location.open()
    except IndexWriteFailed as exc:  # a full disk: the file is kept as it is
        print(f"index {account_id}: could not open the index ({exc}); it stays as it was", file=sys.stderr)
        return 1
    except (IndexPermissions, IndexUnusable, OSError) as exc:
        print(f"index {account_id}: {exc}", file=sys.stderr)
        return 1
    if opened.warning:
        print(f"index {account_id}: warning: {opened.warning}", file=sys.stderr)
    account = config.accounts[account_id]
    connection = AccountConnection(
        account_id, account, credentials=credentials_for(account_id, account), enable_qresync=True
    )
    reading = AttachmentReading.of(config.server) if config.attachments_indexed(account_id) else None
    indexer = Indexer(opened.store, account_id, config.server.index_text_bytes, attachments=reading)
    progress = _Progress(account_id)
    hooks = BuildHooks(on_plan=progress.plan, on_folder=progress.enter, on_progress=progress.advance)
    try:
        build_words = partial(build, connection, indexer, hooks)
        vectors: str | None = None
        if config.meaning_indexed(account_id):
            report, vectors = build_beside(
                lambda: location.open().store, partial(model_for, config), build_words
            )
        else:
            report = build_words()
    except MailError as exc:
        print(f"index {account_id}: {words(exc)}", file=sys.stderr)
        return 1
    except IndexWriteFailed as exc:
        print(f"index {account_id}: could not write the index ({exc}); it stays as it was", file=sys.stderr)
        return 1
    except IndexUnusable as exc:  # a damaged page met while building: the next run moves it aside
        print(f"index {account_id}: {exc}; run again to move it aside and build it anew", file=sys.stderr)
        return 1
    finally:
        progress.close()
        connection.close()
        opened.store.close()
    dropped = f", {len(report.dropped)} folder(s) gone dropped" if report.dropped else ""
    skipped = ", ".join(f"{count} {reason}" for reason, count in sorted(report.skipped_attachments.items()))
    unread = f"; attachments not read: {skipped}" if skipped else ""
    print(
        f"index {account_id}: {report.fetched} new message(s) indexed in "
        f"{report.folders} folder(s){dropped}{unread}; {location.where}"
    )
    if vectors is not None:
        print(f"index {account_id}: {vectors}")
    try:
        removed = location.discard_aside()
    except (IndexWriteFailed, IndexUnusable, OSError) as exc:
        print(f"index {account_id}: the copies moved aside were not deleted ({exc})", file=sys.stderr)
        return 0
    if removed:
        print(f"index {account_id}: deleted the copies moved aside before: {', '.join(removed)}")
    return 0
