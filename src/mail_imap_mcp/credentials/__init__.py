"""Credentials apart from any protocol: for each account, a password login or a token source
(:data:`~mail_imap_mcp.net.tokens.Credentials`), built once by the application root (:class:`.logins.Logins`)
and handed to the IMAP pool, to submission and to any later protocol.

Here live what fetches a token (``oauth2_token_command``: :mod:`.token_command`; the built-in sign-in's
refresh and an application's own token: :mod:`.refresh`), the one token an account's connections share
(:mod:`.tokens`), the built-in sign-in (its client: :mod:`.oauth_client`; the sign-in a call starts:
:mod:`.sign_in_flow`), where a refresh token is kept (the keychain: :mod:`.token_keychain`, or a file:
:mod:`.token_file`), the sign-in's cross-process lock and status record (:mod:`.sign_in_state`), the OS
keychain itself (:mod:`.keychain`) and the secrets read from it (:mod:`.secrets`). The settings they read
are :mod:`mail_imap_mcp.config`'s.
"""
