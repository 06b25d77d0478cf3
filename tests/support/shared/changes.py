"""What tests/pure/test_changes.py shares with other test modules."""

from __future__ import annotations

UIDVALIDITY = 1700000000


def examine_answer(exists: int, uidnext: int) -> list[bytes]:
    return [
        b"* FLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft)",
        b"* %d EXISTS" % exists,
        b"* OK [UIDVALIDITY %d] UIDs valid" % UIDVALIDITY,
        b"* OK [UIDNEXT %d] Predicted next UID" % uidnext,
        b"{tag} OK [READ-ONLY] Examine completed",
    ]
