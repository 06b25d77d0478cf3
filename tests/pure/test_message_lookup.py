"""Finding the message a tool was given by id (services/message_lookup.py), on mail kept in memory
(tests/support/mail/memory_mail.py): the id is read for its caller (another user's said as no message, a
malformed one named as ``message_id``), the account's own connection is the one handed back, and the
mailbox is selected and its UIDVALIDITY checked against the id's."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from mail_imap_mcp.mail.backend import MailboxStatus
from mail_imap_mcp.mail.errors import MailboxMissing, UidValidityChanged
from mail_imap_mcp.mail.ids import ForeignMessageId, InvalidMessageId, MessageRef, user_tag
from mail_imap_mcp.mail.roles import INBOX
from mail_imap_mcp.services.message_lookup import examine_for, message_ref, resolve_message
from mail_imap_mcp.state import Caller
from tests.support.mail.memory_mail import MemoryCall, MemoryMail

MESSAGE = b"From: a@example.org\r\nTo: b@example.org\r\nSubject: hello\r\n\r\nbody\r\n"
ALICE = Caller(user="alice", per_user_accounts=frozenset({"shared"}))
BOB = Caller(user="bob", per_user_accounts=frozenset({"shared"}))


@dataclass
class LookupCall:
    """Whose call it is and each account's connection: here each account's mail kept in memory."""

    mail: MemoryCall
    caller: Caller = field(default_factory=Caller)

    def connection(self, account_id: str) -> MemoryMail:
        return self.mail.mail(account_id)


@dataclass
class Examining:
    """A selection on mail kept in memory: the mailbox's UIDVALIDITY now, each mailbox selected kept."""

    mail: MemoryMail
    examined: list[str] = field(default_factory=list)

    def examine(self, mailbox: str) -> MailboxStatus:
        self.examined.append(mailbox)
        return self.mail.status(mailbox)


def stored(mail: MemoryMail, mailbox: str = INBOX, account_id: str = "default") -> MessageRef:
    appended = mail.append(mailbox, MESSAGE)
    return MessageRef(account_id, mailbox, appended.uidvalidity, appended.uid)


def two_accounts() -> LookupCall:
    return LookupCall(MemoryCall({"default": MemoryMail(), "other": MemoryMail({"Archive": None})}))


def test_an_id_names_its_account_mailbox_and_message() -> None:
    call = two_accounts()
    ref = stored(call.mail.accounts["other"], "Archive", "other")
    assert message_ref(call, ref.message_id) == ref


def test_the_connection_handed_back_is_the_accounts_of_the_id() -> None:
    call = two_accounts()
    ref = stored(call.mail.accounts["other"], "Archive", "other")
    connection, found = resolve_message(call, ref.message_id)
    assert connection is call.mail.accounts["other"]
    assert found == ref
    assert call.mail.reached == 1


@pytest.mark.parametrize(
    "message_id",
    [
        "default:INBOX:1:1",
        "imap:default:INBOX:1",
        "imap:default::1:1",
        "imap:not an account:INBOX:1:1",
        "imap:default:INBOX:one:1",
        "imap:default:INBOX:1:-1",
        "imap:default:IN\r\nBOX:1:1",
    ],
)
def test_a_malformed_id_is_named_as_the_message_id_argument(message_id: str) -> None:
    call = two_accounts()
    with pytest.raises(InvalidMessageId) as raised:
        resolve_message(call, message_id)
    assert raised.value.parameter == "message_id"
    assert not isinstance(raised.value, ForeignMessageId)
    assert call.mail.reached == 0  # no account is reached for an id that names none


def test_another_users_id_is_said_as_no_message_and_reaches_no_account() -> None:
    call = LookupCall(MemoryCall({"shared": MemoryMail()}), caller=ALICE)
    ref = replace(stored(call.mail.accounts["shared"], account_id="shared"), tag=user_tag(BOB, "shared"))
    with pytest.raises(ForeignMessageId) as raised:
        resolve_message(call, ref.message_id)
    assert raised.value.text == ref.message_id
    assert call.mail.reached == 0


def test_an_untagged_id_of_an_account_served_per_user_is_nobodys() -> None:
    call = LookupCall(MemoryCall({"shared": MemoryMail()}), caller=ALICE)
    ref = stored(call.mail.accounts["shared"], account_id="shared")
    with pytest.raises(ForeignMessageId):
        message_ref(call, ref.message_id)


def test_the_users_own_id_keeps_their_tag() -> None:
    call = LookupCall(MemoryCall({"shared": MemoryMail()}), caller=ALICE)
    ref = replace(stored(call.mail.accounts["shared"], account_id="shared"), tag=user_tag(ALICE, "shared"))
    found = message_ref(call, ref.message_id)
    assert (found, found.tag) == (ref, ref.tag)
    assert found.message_id == ref.message_id


def test_examining_selects_the_ids_mailbox_and_answers_its_selection() -> None:
    mail = MemoryMail({"Archive": None})
    ref = stored(mail, "Archive")
    session = Examining(mail)
    assert examine_for(session, ref).uidvalidity == ref.uidvalidity
    assert session.examined == ["Archive"]


def test_a_mailbox_made_again_since_the_id_is_a_conflict_naming_both_uidvalidities() -> None:
    mail = MemoryMail({"Archive": None})
    ref = stored(mail, "Archive")
    mail.delete("Archive")
    mail.create("Archive")
    with pytest.raises(UidValidityChanged) as raised:
        examine_for(Examining(mail), ref)
    now = mail.status("Archive").uidvalidity
    assert (raised.value.expected, raised.value.actual, raised.value.mailbox) == (
        ref.uidvalidity,
        now,
        "Archive",
    )


def test_a_mailbox_gone_since_the_id_is_said_as_missing() -> None:
    mail = MemoryMail({"Archive": None})
    ref = stored(mail, "Archive")
    mail.delete("Archive")
    with pytest.raises(MailboxMissing):
        examine_for(Examining(mail), ref)
