"""Search: what a page of matches reads, how it merges mailboxes and how it continues.

:mod:`.plan` holds the reads of a page as data (UID windows, the one scan of a first page, the merge
keys; no session), :mod:`.merge` the merge of several mailboxes' candidates (no session), and
:mod:`.cursors` the one cursor a search hands out (stateless, sealed). :mod:`.execute` is the one
executor: it sends a plan's reads, every mailbox at once or one after the other, and hands the answers
back. Date order (``UID SORT``, or windows sorted here) and the page as a whole:
:mod:`mail_imap_mcp.imap.sort`.
"""
