"""Building or updating one account's whole index on a connection of its own (``mail-imap-mcp index``
and the running server's background sync).

The folders the personality plans are listed (those no longer there dropped; a folder indexed only on
request is kept current once a search asked for it), with their STATUS where the server has LIST-STATUS
(:mod:`.build_listing`: a folder whose counts and HIGHESTMODSEQ are what the index stored is not opened),
each other folder's changes applied and its new messages counted (:meth:`~mail_imap_mcp.index.sync.FolderSync.begin`), then the new messages fetched a
step of :data:`STEP` at a time, each step one call on the connection (within its time budget; a lost
connection runs the step again, which stores the same rows again). A shared index's folder is under its
lease while either is done (:class:`~.lease.FolderLeases`): a search of another instance waits for it
within its budget. Interrupted anywhere, the next build starts from what was committed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial

from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.index.build_listing import listed_with_counts
from mail_imap_mcp.index.lease import folder_lease
from mail_imap_mcp.index.sync import FolderSync, Indexer
from mail_imap_mcp.index.sync_chunks import OnProgress

#: New messages fetched per call on the connection.
STEP = 2000


@dataclass
class BuildReport:
    """What one build did."""

    folders: int = 0
    #: New messages found, and how many of them were indexed.
    to_fetch: int = 0
    fetched: int = 0
    fetched_bytes: int = 0
    dropped: list[str] = field(default_factory=list)
    #: Folders whose STATUS in the listing showed nothing changed since the index stored them: not opened.
    unchanged: int = 0
    #: Attachments not read (``index_attachments``), by reason, since the indexer was made.
    skipped_attachments: dict[str, int] = field(default_factory=dict)


@dataclass
class BuildHooks:
    """What a build tells its caller: the plan (folders and messages to fetch), then each chunk."""

    on_plan: Callable[[int, int], None] | None = None
    on_folder: Callable[[int, str], None] | None = None
    on_progress: OnProgress | None = None
    #: Asked between steps: True stops the build (the server shutting down).
    stop: Callable[[], bool] = field(default=lambda: False)


def build(
    connection: AccountConnection, indexer: Indexer, hooks: BuildHooks | None = None, *, step: int = STEP
) -> BuildReport:
    """Bring every folder of ``connection``'s account up to date in ``indexer`` (``step``: new messages
    fetched per call on the connection)."""
    hooks = hooks or BuildHooks()
    if indexer.stop is not None:  # the indexer's own stop (its server closing) stops the build too
        hooks = replace(hooks, stop=_either(hooks.stop, indexer.stop))
    report = BuildReport()
    listed = connection.run(listed_with_counts)
    plan = listed.plan
    with indexer.lock:  # a search's freshness check of this process may be syncing a folder it drops
        report.dropped = indexer.adopt(plan)
    stored = indexer.store.folders()
    names = [*plan.always, *(name for name in plan.on_request if name in stored)]
    report.folders = len(names)
    syncs: list[tuple[FolderSync, int]] = []
    for name in names:
        if hooks.stop():
            return report
        if indexer.attachments is None and listed.unchanged(stored.get(name), name):
            report.unchanged += 1  # no EXAMINE, and the indexer's lock not taken: searches go on
            continue
        sync = indexer.folder(name)
        with folder_lease(indexer.folder_leases, name), indexer.lock:
            syncs.append((sync, connection.run(sync.begin)))
            # Messages indexed while index_attachments was off are read again with it on (after the new).
            sync.plan_backfill()
    report.to_fetch = sum(left + len(sync.unread) for sync, left in syncs)
    if hooks.on_plan is not None:
        hooks.on_plan(len(syncs), report.to_fetch)

    def progress(folder: str, messages: int, size: int) -> None:
        report.fetched += messages
        report.fetched_bytes += size
        if hooks.on_progress is not None:
            hooks.on_progress(folder, messages, size)

    try:
        for number, (sync, left) in enumerate(syncs, 1):
            if hooks.on_folder is not None:
                hooks.on_folder(number, sync.name)
            # The indexer's lock is held per chunk stored (FolderSync.lock), not while messages are
            # fetched and their attachments read: a search waits for one chunk's write at most.
            fetch = partial(_fetch, sync, step, progress)
            backfill = partial(_backfill, sync, step, progress)
            with folder_lease(indexer.folder_leases, sync.name):
                while left and not hooks.stop():
                    left = connection.run(fetch)
                while sync.unread and not hooks.stop():
                    connection.run(backfill)
    finally:
        indexer.rest()
    report.skipped_attachments = dict(indexer.skipped_attachments)
    return report


def _either(first: Callable[[], bool], second: Callable[[], bool]) -> Callable[[], bool]:
    return lambda: first() or second()


def _fetch(sync: FolderSync, step: int, progress: OnProgress, session: ImapSession) -> int:
    return sync.fetch(session, step, progress)


def _backfill(sync: FolderSync, step: int, progress: OnProgress, session: ImapSession) -> int:
    return sync.backfill(session, step, progress)
