"""Mail the tests build or inspect: generated and realistic messages, documents, invitations, summaries,
cursors, what a mailbox holds, and the in-memory mail backend."""
