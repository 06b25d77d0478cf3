"""Mail the tests build or inspect: generated and realistic messages, documents, invitations, summaries, cursors, and what a mailbox holds."""
