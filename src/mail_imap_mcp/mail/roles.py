"""The roles a mailbox can play (RFC 6154 special-use attributes), named once for every layer of imap/."""

from __future__ import annotations

INBOX = "INBOX"
TRASH, DRAFTS, SENT, JUNK, ARCHIVE = "\\Trash", "\\Drafts", "\\Sent", "\\Junk", "\\Archive"
#: Virtual views that hold copies of mail kept elsewhere (Gmail's All Mail, Important and Starred;
#: Dovecot's virtual folders).
ALL, FLAGGED, IMPORTANT = "\\All", "\\Flagged", "\\Important"
