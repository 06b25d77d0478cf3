"""The marks a send leaves on the original (services/send_marks.py) on every server of the matrix: the
forwarded message gets ``$Forwarded``, and exactly it: each keeps new keywords (PERMANENTFLAGS ``\\*``; a
folder that keeps none is in test_forward_and_invitation.py, through a Dovecot ACL). Read back by a
session of the test's own."""

from __future__ import annotations

from mail_imap_mcp.config import Config
from mail_imap_mcp.content.forwards import FORWARDED_KEYWORD
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.services.send_marks import mark_original, original_words
from tests.support.accounts import account_settings
from tests.support.mailgen import plain_message
from tests.support.matrix import MatrixServer, inbox_only


def _flags(server: MatrixServer, user: str) -> dict[str, set[str]]:
    with server.connect(user) as client:
        permanent = client.select_folder("INBOX").get(b"PERMANENTFLAGS", ())  # EXAMINE says none
        answer = client.fetch(client.search(), ["FLAGS", "BODY.PEEK[HEADER.FIELDS (SUBJECT)]"])
    flags = {
        next(v for k, v in data.items() if k.startswith(b"BODY[")).decode().split(":", 1)[1].strip(): {
            f.decode() for f in data[b"FLAGS"] if f.lower() != b"\\recent"
        }
        for data in answer.values()
    }
    flags["PERMANENTFLAGS"] = {f.decode() for f in permanent}
    return flags


@inbox_only()
def test_the_forwarded_message_alone_is_marked_where_its_folder_keeps_keywords(
    imap_server: MatrixServer,
) -> None:
    user = imap_server.new_user()
    messages = [plain_message(f"m{i}", "text\r\n", message_id=f"<m{i}@marks.test>") for i in range(3)]
    imap_server.seed(user, "INBOX", messages)
    config = Config.model_validate({"accounts": {"default": account_settings(imap_server, user)}})
    connection = AccountConnection("default", config.accounts["default"])
    try:
        shown = connection.run(original_words(["INBOX"], "<m1@marks.test>"))
        marked = connection.run_write(mark_original(["INBOX"], "<m1@marks.test>", FORWARDED_KEYWORD))
        missing = connection.run_write(mark_original(["INBOX"], "<none@marks.test>", FORWARDED_KEYWORD))
    finally:
        connection.close()
    flags = _flags(imap_server, user)
    assert "\\*" in flags.pop("PERMANENTFLAGS")  # every server of the matrix keeps new keywords (Courier too)
    assert shown is not None and shown.startswith("'m1' of ")
    assert (marked, missing) == ("marked", "not_found")
    assert {subject: FORWARDED_KEYWORD in found for subject, found in flags.items()} == {
        "m0": False, "m1": True, "m2": False
    }  # fmt: skip
