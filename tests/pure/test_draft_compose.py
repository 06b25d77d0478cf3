"""A draft as imap_save_draft composes it (services/draft_compose.py) on mail kept in memory
(tests/support/mail/memory_mail.py): a draft with nothing attached reaches no mail; one that attaches is held to
the smaller of the backend's APPENDLIMIT and, where the account sends, the setting max_send_bytes, and
refused over it before it is saved. Parts of messages attached or forwarded are read from a real server's
FETCH answers: tests/integration/drafts_and_sending/test_draft_attachments.py and test_forward_and_invitation.py."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any, cast

import pytest

from mail_imap_mcp.call import Call
from mail_imap_mcp.config import Config
from mail_imap_mcp.mail.draft_errors import DraftTooLarge
from mail_imap_mcp.services.draft_attachments import SizeLimit, size_limit
from mail_imap_mcp.services.draft_compose import Composed, compose
from mail_imap_mcp.tools.save_draft.models import SaveDraftInput
from tests.support.mail.memory_mail import MemoryCall, MemoryMail

SENDS = {"send_enabled": True, "allowed_recipients": ["*"]}


def _call(mail: MemoryMail, folder: Path | None = None, **account: Any) -> MemoryCall:
    call = MemoryCall({"default": mail}, {"default": account})
    if folder is not None:
        settings = call.config.model_dump()
        settings["server"]["attachment_dirs"] = [str(folder)]
        call.config = Config.model_validate(settings)
    return call


def _compose(call: MemoryCall, **args: Any) -> Composed:
    given = SaveDraftInput.model_validate({"to": ["bob@example.org"], "body_text": "Hello.", **args})
    with ExitStack() as stack:
        return compose(cast(Call, call), "default", given, None, None, stack)


def _file(folder: Path, size: int) -> str:
    path = folder / "report.bin"
    path.write_bytes(b"x" * size)
    return str(path)


def test_a_draft_with_nothing_attached_reaches_no_mail() -> None:
    call = _call(MemoryMail(append_limit=10))
    composed = _compose(call, subject="Plans")
    assert composed.headers["Subject"] == "Plans" and composed.attachments == []
    assert composed.header_id.startswith("<") and call.reached == 0


def test_a_draft_over_the_append_limit_is_refused_naming_it(tmp_path: Path) -> None:
    call = _call(MemoryMail(append_limit=20_000), tmp_path)
    with pytest.raises(DraftTooLarge) as refused:
        _compose(call, attachments=[_file(tmp_path, 30_000)])
    assert (refused.value.limit, refused.value.limited_by) == (20_000, "the IMAP server's APPENDLIMIT")


def test_a_draft_within_the_append_limit_carries_its_file(tmp_path: Path) -> None:
    call = _call(MemoryMail(append_limit=200_000), tmp_path)
    composed = _compose(call, attachments=[_file(tmp_path, 30_000)])
    (attached,) = composed.attachments
    assert (attached.name, attached.size) == ("report.bin", 30_000)
    assert attached.source.startswith("the file ") and composed.built.size <= 200_000


@pytest.mark.parametrize(
    ("append_limit", "account", "expected"),
    [
        (None, {}, None),
        (50_000, {}, SizeLimit(50_000, "the IMAP server's APPENDLIMIT")),
        (None, SENDS, SizeLimit(25 * 1024 * 1024, "the setting max_send_bytes")),
        (50_000, SENDS, SizeLimit(50_000, "the IMAP server's APPENDLIMIT")),
        (10**9, SENDS, SizeLimit(25 * 1024 * 1024, "the setting max_send_bytes")),
    ],
)
def test_the_size_limit_is_the_smaller_of_the_append_limit_and_the_sending_one(
    append_limit: int | None, account: dict[str, Any], expected: SizeLimit | None
) -> None:
    call = _call(MemoryMail(append_limit=append_limit), **account)
    assert size_limit(cast(Call, call), "default") == expected
