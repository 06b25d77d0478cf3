"""The failure registry: every exception class of ``imap/`` and ``content/`` has its envelope error
(:data:`mail_imap_mcp.presentation.failures.REGISTRY`), and :func:`mail_imap_mcp.imap.errors.classify` gives
the answers of Dovecot, Cyrus and Courier (their words as measured on the test servers) one meaning.
No server: the exceptions are built as imapclient raises them."""

from __future__ import annotations

import imaplib
import importlib
import inspect
import pkgutil
import ssl
from types import ModuleType

import pytest
from imapclient.exceptions import IMAPClientAbortError, IMAPClientError
from pydantic import BaseModel

import mail_imap_mcp.content
import mail_imap_mcp.imap
import mail_imap_mcp.local_files
import mail_imap_mcp.mail.sieve_errors
import mail_imap_mcp.managesieve
from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.envelope.mcp import ToolResult
from mail_imap_mcp.imap.errors import (
    ConnectionLost,
    Context,
    SelectionStale,
    ServerLimited,
    ServerRefused,
    TimedOut,
    classify,
    command_refused,
    mailbox_failure,
    message_failure,
)
from mail_imap_mcp.mail.errors import (
    CharsetRejected,
    CommandRefused,
    MailboxGone,
    MailboxMissing,
    OutcomeUnknown,
    Refusal,
    UidValidityChanged,
)
from mail_imap_mcp.presentation.failures import (
    REGISTRY,
    Call,
    mailbox_issue,
    run,
    tool_failure,
)
from mail_imap_mcp.tools.search_messages_models import SearchMessagesInput
from tests.support.translate import as_tool_failure


def _modules(package: ModuleType) -> list[ModuleType]:
    names = [info.name for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    return [package, *(importlib.import_module(name) for name in names)]


def _exception_classes() -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    packages = (
        mail_imap_mcp.imap,
        mail_imap_mcp.content,
        mail_imap_mcp.local_files,
        mail_imap_mcp.managesieve,
    )
    for module in [*(m for package in packages for m in _modules(package)), mail_imap_mcp.mail.sieve_errors]:
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == module.__name__:
                found.add(value)
    return found


def test_every_exception_class_of_imap_and_content_is_mapped() -> None:
    """As httpx tests that every httpcore exception is mapped: a new exception class in ``imap/``,
    ``content/``, ``local_files/``, ``managesieve/`` or ``mail/sieve_errors.py`` needs its line in the registry (and so its envelope error) before it can ship."""
    classes = _exception_classes()
    assert len(classes) >= 15, sorted(c.__name__ for c in classes)  # the walk found them
    unmapped = sorted(f"{c.__module__}.{c.__qualname__}" for c in classes if c not in REGISTRY)
    assert unmapped == [], "add these to mail_imap_mcp.presentation.failures.REGISTRY"


def _no(command: str, said: str) -> IMAPClientError:
    """A NO answer as imapclient raises it."""
    return IMAPClientError(f"{command.lower()} failed: {said}")


# (server, command, mailbox named, the server's words, the meaning)
ANSWERS = [
    (
        "dovecot",
        "RENAME",
        "NoSuch",
        "[NONEXISTENT] Mailbox doesn't exist: NoSuch (0.001 + 0.000 secs).",
        MailboxMissing,
    ),
    (
        "dovecot",
        "DELETE",
        "NoSuch",
        "[NONEXISTENT] Mailbox doesn't exist: NoSuch (0.001 + 0.000 secs).",
        MailboxMissing,
    ),
    ("dovecot", "SELECT", "NoSuch", "Mailbox doesn't exist: NoSuch (0.001 + 0.000 secs).", MailboxMissing),
    (
        "dovecot",
        "APPEND",
        "NoSuch",
        "[TRYCREATE] Mailbox doesn't exist: NoSuch (0.001 + 0.000 secs).",
        MailboxMissing,
    ),
    (
        "dovecot",
        "CREATE",
        "INBOX",
        "[ALREADYEXISTS] Mailbox already exists (0.001 + 0.000 secs).",
        Refusal.EXISTS,
    ),
    (
        "dovecot",
        "DELETE",
        "Parent",
        "[HASCHILDREN] Mailbox has children, delete them first",
        Refusal.HAS_CHILDREN,
    ),
    (
        "dovecot",
        "UID COPY",
        "Full",
        "[OVERQUOTA] Quota exceeded (mailbox for user is full)",
        Refusal.OVER_QUOTA,
    ),
    ("dovecot", "UID STORE", "Shared", "[NOPERM] Permission denied", Refusal.NOT_PERMITTED),
    ("dovecot", "UID SEARCH", "INBOX", "[BADCHARSET] (US-ASCII) Unsupported charset", CharsetRejected),
    ("cyrus", "RENAME", "INBOX.NoSuch", "Mailbox does not exist", MailboxMissing),
    ("cyrus", "SELECT", "INBOX.NoSuch", "Mailbox does not exist", MailboxMissing),
    ("cyrus", "UID COPY", "INBOX.NoSuch", "[TRYCREATE] Mailbox does not exist", MailboxMissing),
    ("cyrus", "CREATE", "INBOX.A", "Mailbox already exists", Refusal.EXISTS),
    ("cyrus", "DELETE", "INBOX.A", "Mailbox has inferior hierarchical names", Refusal.HAS_CHILDREN),
    ("cyrus", "DELETE", "INBOX.A", "Permission denied", Refusal.NOT_PERMITTED),
    ("cyrus", "RENAME", "INBOX.A", "Invalid mailbox name", Refusal.OTHER),
    (
        "courier",
        "SELECT",
        "INBOX.NoSuch",
        "Mailbox does not exist, or must be subscribed to.",
        MailboxMissing,
    ),
    (
        "courier",
        "DELETE",
        "INBOX.NoSuch",
        "Mailbox does not exist, or must be subscribed to.",
        MailboxMissing,
    ),
    ("courier", "EXAMINE", "NoSuch", "Invalid mailbox name.", MailboxMissing),
    ("courier", "UID COPY", "INBOX.NoSuch", "[TRYCREATE] Mailbox does not exist.", MailboxMissing),
    ("courier", "APPEND", "INBOX.NoSuch", "[TRYCREATE] Must create mailbox before append", MailboxMissing),
    ("courier", "CREATE", "INBOX", "INBOX already exists!", Refusal.EXISTS),
    ("courier", "RENAME", "INBOX.A", "RENAME failed: File exists", Refusal.EXISTS),
    # A new name outside the namespace or with a refused character, never a missing source: Courier
    # answers RENAME of a missing source "OK Folder renamed." and changes nothing.
    ("courier", "RENAME", "INBOX.A", "Invalid mailbox name.", Refusal.OTHER),
    ("courier", "CREATE", "INBOX.x/y", "Cannot create this folder.", Refusal.OTHER),
    # Gmail's limits, documented in its IMAP help: for a while, not for good.
    (
        "gmail",
        "UID FETCH",
        "INBOX",
        "[THROTTLED] Account exceeded command or bandwidth limits. (Failure)",
        ServerLimited,
    ),
    ("gmail", "SELECT", "INBOX", "[ALERT] Too many simultaneous connections. (Failure)", ServerLimited),
]


@pytest.mark.parametrize(
    ("server", "command", "mailbox", "said", "meaning"),
    ANSWERS,
    ids=[f"{a[0]}-{a[1]}-{a[3][:24]}" for a in ANSWERS],
)
def test_classify_gives_each_server_answer_one_meaning(
    server: str, command: str, mailbox: str, said: str, meaning: type[Exception] | Refusal
) -> None:
    failure = classify(_no(command, said), Context(command, mailbox))
    if isinstance(meaning, Refusal):
        assert isinstance(failure, CommandRefused), failure
        assert (failure.reason, failure.command, failure.mailbox) == (meaning, command, mailbox)
        assert said[:40] in failure.said
    else:
        assert type(failure) is meaning, failure
    if isinstance(failure, MailboxMissing):
        assert (failure.mailbox, failure.command) == (mailbox, command)


def test_a_refusal_in_the_selected_mailbox_and_the_selected_mailbox_gone() -> None:
    """COPY's refusal is "in" the source; its [TRYCREATE] names the destination; a command on the
    mailbox this call selected hearing "does not exist" (Cyrus's FETCH after another session's DELETE)
    means it went away."""
    refused = classify(_no("UID COPY", "[OVERQUOTA] Quota exceeded"), Context("UID COPY", "Archive", "INBOX"))
    assert isinstance(refused, CommandRefused) and refused.mailbox == "INBOX"
    missing = classify(
        _no("UID COPY", "[TRYCREATE] Mailbox does not exist"), Context("UID COPY", "Archive", "INBOX")
    )
    assert isinstance(missing, MailboxMissing) and missing.mailbox == "Archive"
    gone = classify(
        _no("UID FETCH", "Mailbox does not exist"), Context("UID FETCH", "INBOX", account_id="work")
    )
    assert isinstance(gone, MailboxGone) and (gone.account_id, gone.mailbox) == ("work", "INBOX")


@pytest.mark.parametrize(
    ("exc", "meaning"),
    [
        (IMAPClientAbortError("socket error: EOF"), ConnectionLost),
        (imaplib.IMAP4.abort("command: FETCH => socket error: EOF"), ConnectionLost),
        (ConnectionResetError(104, "Connection reset by peer"), ConnectionLost),
        (ssl.SSLEOFError(8, "EOF occurred in violation of protocol"), ConnectionLost),
        (BrokenPipeError(32, "Broken pipe"), ConnectionLost),
        # Dovecot, once the selected mailbox changed under the session: only a new session helps.
        (
            IMAPClientError("fetch failed: [SERVERBUG] Session state is inconsistent, please relogin."),
            ConnectionLost,
        ),
        (TimeoutError("The read operation timed out"), TimedOut),
        (TimeoutError(), TimedOut),
    ],
)
def test_dead_connections_and_timeouts(exc: BaseException, meaning: type[Exception]) -> None:
    failure = classify(exc)
    assert type(failure) is meaning
    assert failure is not None and failure.ends_call


def test_what_is_no_imap_failure_stays_itself() -> None:
    assert classify(ValueError("a bug")) is None
    assert classify(KeyError("x")) is None
    stale = UidValidityChanged(1, 2)
    assert classify(stale) is stale


def test_one_mailbox_or_the_whole_call_is_decided_once() -> None:
    """A refusal, a missing or recreated mailbox, a refused charset: that mailbox's issue, the call goes
    on. A dead connection, a timeout, a stale view, a bug: the whole call's."""
    for local in (
        _no("UID SEARCH", "Mailbox does not exist"),
        _no("UID SORT", "Internal error occurred"),
        UidValidityChanged(1, 2),
        CharsetRejected(),
        MailboxMissing("Gone", "EXAMINE"),
    ):
        assert mailbox_failure(local) is not None, local
    for whole in (
        IMAPClientAbortError("EOF"),
        TimeoutError(),
        SelectionStale(),
        ConnectionLost(),
        ValueError(),
    ):
        assert mailbox_failure(whole) is None, whole
    # One message of a FETCH: its refusal, or the connection dying on it (reconnect, go on); what the
    # session already judged (the mailbox gone or recreated) and timeouts end the read.
    assert isinstance(message_failure(_no("UID FETCH", "Internal error")), CommandRefused)
    assert isinstance(message_failure(IMAPClientAbortError("EOF")), ConnectionLost)
    for whole in (MailboxGone("a", "INBOX"), UidValidityChanged(1, 2), TimeoutError(), ValueError()):
        assert message_failure(whole) is None, whole
    # The server's NO or BAD to the command just sent (a STATUS, a part's FETCH, AUTHENTICATE): nothing
    # else, not even a dead connection.
    assert isinstance(command_refused(_no("STATUS", "Internal error")), CommandRefused)
    for other in (IMAPClientAbortError("EOF"), MailboxGone("a", "INBOX"), TimeoutError(), ValueError()):
        assert command_refused(other) is None, other


class _Args(BaseModel):
    account_id: str = "default"
    mailbox: str = "INBOX"


@pytest.fixture
def call() -> Call:
    config = Config.model_validate(
        {"accounts": {"work": {"host": "imap.example.org", "username": "u", "password": "p"}}}
    )
    return Call(AppContext.from_config(config), _Args())


def test_envelope_errors_keep_their_codes_and_words(call: Call) -> None:
    cases: list[tuple[BaseException, ErrorCode, str]] = [
        (
            MailboxMissing("Nope", "EXAMINE"),
            ErrorCode.NOT_FOUND,
            "Mailbox 'Nope' does not exist or cannot be opened",
        ),
        (
            MailboxMissing("Archive", "UID MOVE"),
            ErrorCode.NOT_FOUND,
            "Mailbox 'Archive' (destination_mailbox) does not",
        ),
        (MailboxGone("work", "INBOX"), ErrorCode.CONFLICT, "was deleted or replaced by another session"),
        (
            CommandRefused("UID STORE", "INBOX", Refusal.OVER_QUOTA, "[OVERQUOTA] full"),
            ErrorCode.LIMIT_EXCEEDED,
            "The server refused UID STORE in 'INBOX': [OVERQUOTA] full",
        ),
        (
            CommandRefused("UID EXPUNGE", "INBOX", Refusal.OTHER, "Internal error"),
            ErrorCode.UNAVAILABLE,
            "The server refused UID EXPUNGE in 'INBOX'",
        ),
        (ConnectionLost(), ErrorCode.UNAVAILABLE, "Lost the connection to imap.example.org"),
        (TimedOut(), ErrorCode.TIMEOUT, "imap.example.org did not answer in time"),
        (IMAPClientAbortError("EOF"), ErrorCode.UNAVAILABLE, "Lost the connection"),  # classified first
    ]
    for exc, code, words in cases:
        failure = tool_failure(exc, call)
        assert failure is not None, exc
        assert failure.code is code, (exc, failure.message)
        assert words in failure.message, failure.message
    assert tool_failure(ValueError("a bug"), call) is None
    mine = ToolFailure(ErrorCode.NOT_FOUND, "as the tool said")
    assert tool_failure(mine, call) is mine


def test_a_connection_translates_what_leaves_run_but_not_what_its_caller_handles() -> None:
    """``as_tool_failure`` is the tools' ``translate``: a mailbox missing or gone leaves ``run`` as its
    envelope error (a tool's audit sees the code); a stale id, a refused charset and a write's unknown
    outcome stay domain errors, for the tool to answer (``for_caller``)."""
    gone = as_tool_failure(MailboxGone("work", "INBOX"))
    assert isinstance(gone, ToolFailure) and gone.code is ErrorCode.CONFLICT
    missing = as_tool_failure(MailboxMissing("Nope", "EXAMINE"))
    assert isinstance(missing, ToolFailure) and missing.code is ErrorCode.NOT_FOUND
    assert all(kind.for_caller for kind in (UidValidityChanged, CharsetRejected, OutcomeUnknown))
    assert not any(kind.for_caller for kind in (MailboxMissing, MailboxGone, CommandRefused, ConnectionLost))


def test_issue_of_a_mailbox_that_could_not_be_searched() -> None:
    assert mailbox_issue("Old", MailboxMissing("Old", "EXAMINE")).code == "not_found"
    assert mailbox_issue("Old", MailboxGone("work", "Old")).code == "conflict"
    assert mailbox_issue("Old", UidValidityChanged(1, 2)).code == "conflict"
    assert mailbox_issue("Old", CharsetRejected()).code == "charset_unsupported"
    issue = mailbox_issue("Old", CommandRefused("UID SEARCH", "Old", Refusal.OTHER, "Internal error"))
    assert (issue.code, issue.retryable) == ("search_failed", True)
    assert "Search it alone with mailbox='Old'" in issue.message


def test_the_runner_turns_what_a_handler_raises_into_its_envelope_error(call: Call) -> None:
    def handler(app: AppContext, args: _Args) -> ToolResult[_Args]:
        raise MailboxGone("work", args.mailbox)

    with pytest.raises(ToolFailure) as raised:
        run(handler, call.app, _Args())
    assert raised.value.code is ErrorCode.CONFLICT
    assert raised.value.next_action is not None and raised.value.next_action.tool == "imap_list_mailboxes"

    def buggy(app: AppContext, args: _Args) -> ToolResult[_Args]:
        raise ValueError("a bug")

    with pytest.raises(ValueError, match="a bug"):  # the envelope layer answers `internal`
        run(buggy, call.app, _Args())


def test_a_recreated_mailbox_under_a_cursor_reruns_the_call_from_its_first_page(call: Call) -> None:
    """The conflict of a paging call takes its rerun arguments from the call (no tool catches it)."""
    paging = Call(call.app, SearchMessagesInput.model_validate({"from": "ann", "limit": 3, "cursor": "abc"}))
    failure = tool_failure(UidValidityChanged(5, 6), paging)
    assert failure is not None and failure.code is ErrorCode.CONFLICT
    assert failure.next_action is not None and failure.next_action.tool == "imap_search_messages"
    # As given: without a mailbox named, the rerun names none either (the same default decides).
    assert failure.next_action.arguments == {"from": "ann", "limit": 3, "account_id": "work"}
    named = Call(call.app, SearchMessagesInput.model_validate({"mailbox": "*", "cursor": "abc"}))
    rerun = tool_failure(UidValidityChanged(5, 6, "Archive"), named)
    assert rerun is not None and rerun.next_action is not None
    assert rerun.next_action.arguments == {"mailbox": "*", "account_id": "work"}
    # A call without a cursor (a message id's mailbox recreated) reruns a plain search of the mailbox.
    plain = tool_failure(UidValidityChanged(5, 6, "Archive"), call)
    assert plain is not None and plain.next_action is not None
    assert plain.next_action.arguments == {"account_id": "work", "mailbox": "Archive"}


def test_a_refusal_handed_up_by_the_wire_is_worded_by_what_it_says(call: Call) -> None:
    """ServerRefused (a NO or BAD as imap/wire.py hands it up) reaches the registry like the libraries'
    own errors did: its words decide the domain error."""
    cases = [
        (ServerRefused("NO [NONEXISTENT] Mailbox doesn't exist: Nope"), ErrorCode.NOT_FOUND),
        (ServerRefused("NO [BADCHARSET (US-ASCII)] charset"), ErrorCode.INVALID_INPUT),
        (ServerRefused("NO [OVERQUOTA] Quota exceeded"), ErrorCode.LIMIT_EXCEEDED),
    ]
    for refusal, code in cases:
        failure = tool_failure(refusal, call)
        assert failure is not None and failure.code is code, (refusal, failure)
