"""What the model reads, shared by the tools: one concern per module.

- ``arguments``: the argument types several tools take (account, message id, mailbox, search text,
  part id, attachment mode, output shape);
- ``shapes``: the message shapes the model sees, full and compact, and the untrusted-content marker;
- ``failures``: every domain error as the envelope error the model reads (the one failure registry),
  ``connect_failures`` for connecting and logging in, ``call`` what it knows of the call that failed;
- ``search_page``: the page of imap_search_messages, the same for every search order;
- ``message``: one message read, in the full message shape;
- ``operations``: a background write as the model sees it;
- ``writes``: what the write tools say (argument descriptions, the background answer, refusals).

It imports no tool and no service: the tools put the services' records into these shapes.
"""
