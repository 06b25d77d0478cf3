"""The cases of the mail backend contract (``tests/support/shared/mail_contract.py``) where a differential
run of random operations found the memory backend and ``imap/backend.py`` answering otherwise than the
servers (issue 89): copies and moves of UIDs not there, an APPEND to the mailbox just read, the one spelling
of a keyword in a mailbox; and mailboxes made, renamed and deleted (``MailMailboxes``).
"""

from __future__ import annotations

import contextlib

import pytest

from mail_imap_mcp import query
from mail_imap_mcp.mail.errors import CommandRefused, MailboxMissing, Refusal
from mail_imap_mcp.mail.roles import INBOX
from mail_imap_mcp.mail.write_errors import DestinationMissing
from mail_imap_mcp.mail.write_records import Copied
from tests.support.shared.mail_contract import EVERY_SERVER, Mail, case, message

#: How a server says a name is taken: Courier gives no reason ("Cannot create this folder.").
WHY_TAKEN = (Refusal.EXISTS, Refusal.OTHER)


@case(*EVERY_SERVER)
def a_copy_or_move_of_uids_not_there_lands_nothing(mail: Mail) -> None:
    uid = mail.backend.append(INBOX, message("Here")).uid
    archive = mail.backend.status(mail.archive)
    assert mail.backend.copy(INBOX, [uid + 10], mail.archive) == Copied(archive.uidvalidity, {})
    assert mail.backend.move(INBOX, [uid + 11, uid + 12], mail.archive) == Copied(archive.uidvalidity, {})
    assert mail.backend.search(INBOX, query.AllOf()) == [uid]
    assert mail.backend.status(mail.archive).messages == archive.messages


@case(*EVERY_SERVER)
def a_copy_or_move_answers_every_message_it_landed_and_no_other(mail: Mail) -> None:
    first = mail.backend.append(INBOX, message("One")).uid
    second = mail.backend.append(INBOX, message("Two")).uid
    before = mail.backend.status(mail.archive).messages
    copied = mail.backend.copy(INBOX, [first, second + 10], mail.archive)
    assert sorted([*copied.uids, *copied.unnamed]) == [first]  # named or not, never left out
    moved = mail.backend.move(INBOX, [first, second, second + 11], mail.archive)
    assert sorted([*moved.uids, *moved.unnamed]) == [first, second]
    assert mail.backend.search(INBOX, query.AllOf()) == []
    assert mail.backend.status(mail.archive).messages == before + 3


@case(*EVERY_SERVER)
def a_copy_or_move_of_uids_not_there_to_a_missing_mailbox_is_refused_as_missing(mail: Mail) -> None:
    uid = mail.backend.append(INBOX, message("Here")).uid
    for transfer in (mail.backend.copy, mail.backend.move):
        with pytest.raises(DestinationMissing):
            transfer(INBOX, [uid + 10], mail.missing)
    assert mail.backend.search(INBOX, query.AllOf()) == [uid]


@case(*EVERY_SERVER)
def an_append_to_the_mailbox_just_read_is_made(mail: Mail) -> None:
    first = mail.backend.append(INBOX, message("First")).uid
    assert mail.backend.search(INBOX, query.AllOf()) == [first]  # INBOX EXAMINEd: Courier refuses APPEND
    second = mail.backend.append(INBOX, message("Second")).uid
    assert mail.backend.search(INBOX, query.AllOf()) == [first, second]


@case(*EVERY_SERVER)
def a_keyword_keeps_the_first_spelling_its_mailbox_saw(mail: Mail) -> None:
    first = mail.backend.append(INBOX, message("First"), ["$Work"]).uid
    second = mail.backend.append(INBOX, message("Second"), ["$WORK"]).uid
    third = mail.backend.append(INBOX, message("Third")).uid
    mail.backend.store(INBOX, [third], "add", ["$work"])
    found = mail.backend.flags(INBOX, [first, second, third])
    assert [set(found[uid].flags) - {"\\Recent"} for uid in (first, second, third)] == [{"$Work"}] * 3
    copied = mail.backend.copy(INBOX, [second], mail.archive).uids[second]
    assert set(mail.backend.flags(mail.archive, [copied])[copied].flags) - {"\\Recent"} == {"$Work"}
    assert mail.backend.search(INBOX, query.HasKeyword("$WoRk")) == [first, second, third]


@case("memory", "dovecot", "cyrus")
def a_keyword_stored_on_no_message_or_removed_keeps_its_first_spelling(mail: Mail) -> None:
    uid = mail.backend.append(INBOX, message("Later")).uid
    mail.backend.store(INBOX, [uid + 5], "add", ["$LATE"])  # no message there: the mailbox knows it now
    mail.backend.store(INBOX, [uid], "add", ["$Late"])
    mail.backend.store(INBOX, [uid], "remove", ["$late"])
    mail.backend.store(INBOX, [uid], "add", ["$late"])
    assert set(mail.backend.flags(INBOX, [uid])[uid].flags) - {"\\Recent"} == {"$LATE"}


# -- mailboxes made, renamed and deleted (MailMailboxes) -------------------------------------------------


@case(*EVERY_SERVER)
def a_mailbox_made_is_listed_and_empty_and_a_name_taken_is_refused(mail: Mail) -> None:
    made = mail.named("Projects")
    mail.backend.create_mailbox(made)
    assert made in {box.name for box in mail.backend.mailboxes()}
    assert (mail.backend.messages(made), mail.backend.status(made).messages) == (0, 0)
    for taken in (made, mail.archive):
        with pytest.raises(CommandRefused) as refused:
            mail.backend.create_mailbox(taken)
        # Courier says no reason ("Cannot create this folder."), the others that the name exists
        assert (refused.value.command, refused.value.mailbox, refused.value.reason in WHY_TAKEN) == (
            "CREATE",
            taken,
            True,
        )


@case(*EVERY_SERVER)
def a_renamed_mailbox_keeps_its_messages_their_uids_and_its_children(mail: Mail) -> None:
    old, new = mail.named("Old"), mail.named("New")
    mail.backend.create_mailbox(old)
    child = mail.named("Old", "Child")
    mail.backend.create_mailbox(child)
    uids = [mail.backend.append(old, message(f"Kept {n}")).uid for n in range(2)]
    mail.backend.append(child, message("Below"))
    mail.backend.search(old, query.AllOf())  # the mailbox open on the connection when it is renamed
    before = mail.backend.status(old)
    mail.backend.rename_mailbox(old, new)
    after = mail.backend.status(new)
    assert (after.messages, after.uidnext) == (2, before.uidnext)
    names = {box.name for box in mail.backend.mailboxes()}
    assert (old in names, child in names, new in names, mail.named("New", "Child") in names) == (
        False,
        False,
        True,
        True,
    )
    assert mail.backend.search(new, query.AllOf()) == uids
    assert [mail.backend.raw(new, uid) for uid in uids] == [message(f"Kept {n}") for n in range(2)]
    assert mail.backend.messages(mail.named("New", "Child")) == 1
    with pytest.raises(MailboxMissing):
        mail.backend.messages(old)


@case("memory", "dovecot", "cyrus")
def a_renamed_mailbox_keeps_its_uidvalidity_and_next_uid(mail: Mail) -> None:
    old, new = mail.named("Old"), mail.named("New")
    mail.backend.create_mailbox(old)
    mail.backend.expunge(old, [mail.backend.append(old, message("Gone")).uid])
    before = mail.backend.status(old)
    mail.backend.rename_mailbox(old, new)
    after = mail.backend.status(new)
    assert (
        (after.uidvalidity, after.uidnext) == (before.uidvalidity, before.uidnext) == (before.uidvalidity, 2)
    )


@case("memory-as-courier", "courier")
def a_renamed_mailbox_is_another_uidvalidity_its_messages_numbered_afresh(mail: Mail) -> None:
    old, new = mail.named("Old"), mail.named("New")
    mail.backend.create_mailbox(old)
    mail.backend.expunge(old, [mail.backend.append(old, message("Gone")).uid])
    kept = mail.backend.append(old, message("Kept")).uid
    before = mail.backend.status(old)
    mail.backend.rename_mailbox(old, new)
    after = mail.backend.status(new)
    assert (kept, before.uidnext, after.uidvalidity != before.uidvalidity, after.uidnext) == (2, 3, True, 2)
    assert mail.backend.raw(new, 1) == message("Kept")


@case(*EVERY_SERVER)
def a_rename_to_a_name_taken_or_of_a_mailbox_missing_is_refused(mail: Mail) -> None:
    taken = mail.named("Taken")
    mail.backend.create_mailbox(taken)
    with pytest.raises(CommandRefused) as refused:
        mail.backend.rename_mailbox(mail.archive, taken)
    assert (refused.value.command, refused.value.mailbox, refused.value.reason) == (
        "RENAME",
        mail.archive,
        Refusal.EXISTS,
    )
    with contextlib.suppress(MailboxMissing):  # Courier answers OK, and nothing changes
        mail.backend.rename_mailbox(mail.missing, mail.named("Elsewhere"))
    names = {box.name for box in mail.backend.mailboxes()}
    assert {mail.archive, taken} <= names and mail.named("Elsewhere") not in names


@case(*EVERY_SERVER)
def a_deleted_mailbox_is_gone_and_made_again_is_another(mail: Mail) -> None:
    doomed = mail.named("Doomed")
    mail.backend.create_mailbox(doomed)
    before = mail.backend.status(doomed)
    mail.backend.search(doomed, query.AllOf())  # the mailbox open on the connection when it is deleted
    mail.backend.delete_mailbox(doomed)
    assert doomed not in {box.name for box in mail.backend.mailboxes()}
    with pytest.raises(MailboxMissing):
        mail.backend.status(doomed)
    with pytest.raises(MailboxMissing):
        mail.backend.delete_mailbox(doomed)
    mail.backend.create_mailbox(doomed)
    assert mail.backend.status(doomed).uidvalidity != before.uidvalidity


@case(*EVERY_SERVER)
def a_mailbox_is_counted_as_a_fresh_look_sees_it(mail: Mail) -> None:
    mail.backend.append(mail.archive, message("One"))
    mail.backend.search(mail.archive, query.AllOf())
    mail.backend.append(mail.archive, message("Two"))
    assert mail.backend.messages(mail.archive) == 2
    with pytest.raises(MailboxMissing):
        mail.backend.messages(mail.missing)
