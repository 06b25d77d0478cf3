"""What imap_save_draft answers: the saved draft's id (or why it is unknown), the draft as the user will
see it, the undo of a revision, and the call to make next (save it for real, read it back, look for it)."""

from __future__ import annotations

from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import Issue, NextAction, ToolResult
from mail_imap_mcp.envelope.model import status_for
from mail_imap_mcp.mail.drafts import DRAFT_FLAGS
from mail_imap_mcp.mail.ids import MessageRef, user_tag
from mail_imap_mcp.presentation.shapes import UntrustedContent
from mail_imap_mcp.services.draft_compose import Composed
from mail_imap_mcp.services.drafts import Original, Replaced, Saving, undo_replacement
from mail_imap_mcp.tools.save_draft.models import (
    NAME,
    DraftAttachment,
    DraftMessage,
    SaveDraftData,
    SaveDraftInput,
)


def saved_answer(
    app: Call,
    args: SaveDraftInput,
    account_id: str,
    mailbox: str,
    draft: Composed,
    original: Original | None,
    replaced: Replaced | None,
    saving: Saving,
    issues: list[Issue],
) -> ToolResult[SaveDraftData]:
    """The answer to a draft saved (or not: a dry run, an outcome unknown) in ``mailbox``."""
    header_id, warnings, made_of = draft.header_id, draft.warnings, draft.source.made_of
    found, located_by, saved, retired = saving.found, saving.located_by, saving.saved, saving.retired
    removed = saving.removed
    if original is not None:
        warnings += original.warnings
    ref = (
        MessageRef(account_id, mailbox, *found, user_tag(app.caller, account_id))
        if found is not None
        else None
    )
    undo = undo_replacement(replaced, retired, ref, warnings)
    data = SaveDraftData(
        account_id=account_id,
        mailbox=mailbox,
        message_id=ref.message_id if ref else None,
        located_by=located_by,
        header_message_id=header_id,
        in_reply_to=original.ref.message_id if original else None,
        replaced_message_id=replaced.ref.message_id if replaced is not None and removed else None,
        replaced_trash_message_id=retired.trash_id if retired is not None else None,
        undo=undo,
        flags=list(DRAFT_FLAGS),
        saved=saved,
        dry_run=args.dry_run,
        draft=DraftMessage(
            headers=draft.headers,
            body_text=draft.text if args.dry_run else None,
            size_bytes=draft.built.size,
            attachments=[
                DraftAttachment(name=a.name, content_type=a.content_type, size_bytes=a.size, source=a.source)
                for a in draft.attachments
            ],
            forwarded=draft.source.forwarded,
            invitation_reply=draft.source.invitation_reply,
        ),
        status=status_for(issues),
        issues=issues,
        next_action=undo[0] if undo else _next_action(args, account_id, mailbox, ref, header_id, saved),
        untrusted_content=UntrustedContent(
            fields=["draft.body_text", "draft.headers"] * (original is not None or made_of is not None)
            + ["draft.attachments"] * bool(draft.attachments)
            + ["draft.forwarded"] * bool(draft.source.forwarded)
            + ["draft.invitation_reply"] * bool(draft.source.invitation_reply)
        ),
    )
    # No subject in the summary: a reply's is the original sender's text (it is in data.draft).
    if args.dry_run:
        summary = f"Dry run: draft for {mailbox!r} not saved"
    elif saved:
        summary = f"Draft saved in {mailbox!r} (not sent)" + (
            ", replacing the earlier one (moved to Trash)" if removed else ""
        )
    else:
        summary = f"Outcome unknown: the connection was lost while saving the draft to {mailbox!r}"
    return ToolResult(summary=summary, data=data, warnings=warnings)


def _next_action(
    args: SaveDraftInput, account_id: str, mailbox: str, ref: MessageRef | None, header_id: str, saved: bool
) -> NextAction:
    if args.dry_run:
        return NextAction(
            instruction="Save this draft (same call without dry_run)",
            tool=NAME,
            arguments={**args.model_dump(exclude_defaults=True), "dry_run": False},
        )
    if ref is not None:
        return NextAction(
            instruction="Read the saved draft back",
            tool="imap_get_message",
            arguments={"message_id": ref.message_id},
        )
    return NextAction(
        instruction="Look at the Drafts folder"
        if saved
        else "Look for the draft in the Drafts folder (by its Message-ID) before saving it again",
        tool="imap_search_messages",
        arguments={"account_id": account_id, "mailbox": mailbox, "query": header_id.strip("<>")},
    )
