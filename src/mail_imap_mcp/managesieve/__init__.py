"""ManageSieve (RFC 5804): an account's Sieve scripts on its server, the implementation of
``mail/sieve.py``'s :class:`~mail_imap_mcp.mail.sieve.SieveScripts` beside ``imap/`` and ``smtp/``, on
``net/``'s sockets, TLS and SASL (STARTTLS; PLAIN, XOAUTH2, OAUTHBEARER) and the call's budget.

Written here rather than on ``sievelib`` (MIT; its ``managesieve.Client`` was read, version 1.6): that
client opens its own socket with no connect timeout and wraps TLS with a default context in name-mangled
methods (neither ``net/``'s sockets, an account's CA file nor a call's deadline can be put in), reads with
one fixed 5 s timeout, returns booleans with the server's words left in attributes, drops capabilities
it does not know, parses a listing with a pattern that breaks on a name holding ``"``, and joins a
fetched script's lines with ``\\n`` (not the text as stored). RFC 5804 is small: :mod:`.wire` reads its
strings and responses within bounds, :mod:`.session` speaks the commands.
"""
