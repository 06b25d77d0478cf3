"""Code the tools share, one concern per module:

- ``arguments``: the argument types several tools take (account, message id, mailbox, search text,
  part id, attachment mode, output shape);
- ``shapes``: the message shapes the model sees, full and compact, and the untrusted-content marker;
- ``failures``: every domain error as the envelope error the model reads (the one failure registry);
- ``message_lookup``: a message id checked and its mailbox examined;
- ``message_read``: one message read by id, its body rendered in the format asked for;
- ``attachment_fetch``: one attachment part fetched (bounded, spooled), its size judged;
- ``attachment_text``: an attachment as text (the reader that fits, its limits named as settings);
- ``search_page``: the page of imap_search_messages, the same for every search order.

The tools themselves are the other modules of :mod:`mail_imap_mcp.tools`, one per tool.
"""
