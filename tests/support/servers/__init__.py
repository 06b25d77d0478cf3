"""The servers the tests start: the IMAP servers of the matrix, the Gmail emulation, and the services
beside them (submission, PostgreSQL, Redis, HAProxy, identity providers, keychains, HTTP), and the proxies
that delay or break a link."""
