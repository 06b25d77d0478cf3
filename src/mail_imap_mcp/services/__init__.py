"""What the tools do with mail, shared by several of them: one concern per module.

- ``message_lookup``: a message id checked and its mailbox examined;
- ``message_read``: one message read by id, its body rendered in the format asked for;
- ``attachment_fetch``: one attachment part fetched (bounded, spooled), its size judged;
- ``attachment_text``: an attachment as text (the reader that fits, its limits named as settings);
- ``drafts``: a draft saved, and the one it replaces moved to Trash;
- ``needs_reply``: a page's candidates without those a message in Sent answers;
- ``search``: a page of a search, of one mailbox or merged over several, in arrival or date order;
- ``search_backend``: which backend answers a search;
- ``mailbox_names``: the names imap_manage_mailbox creates, renames or deletes, resolved;
- ``writes``: the connection a bulk write runs on, and the confirmation a permanent delete needs.

Which backend answers a search (IMAP SEARCH today; a local index or Gmail's own search next) is chosen
here, in ``search_backend``. Services import no tool and nothing of ``presentation/``: they raise domain
errors (the failure registry words them) and return records, which the tools and ``presentation/`` put
into what the model reads.
"""
