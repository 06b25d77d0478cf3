"""What tests/pure/test_env_form.py shares with other test modules."""

from __future__ import annotations

#: What Claude Desktop passes for the bundle's form with only the address and the password filled in.
FORM = {
    "MAIL_IMAP_DEFAULT_ADDRESSES": "you@gmail.com",
    "MAIL_IMAP_DEFAULT_HOST": "",
    "MAIL_IMAP_DEFAULT_PORT": "",
    "MAIL_IMAP_DEFAULT_USER": "",
    "MAIL_IMAP_DEFAULT_PASS": "app-password",
    "MAIL_IMAP_DEFAULT_SECURITY": "",
    "MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND": "",
    "MAIL_IMAP_DEFAULT_OAUTH2_PROVIDER": "",
    "MAIL_IMAP_DEFAULT_OAUTH2_CLIENT_ID": "",
    "MAIL_IMAP_DEFAULT_OAUTH2_CLIENT_SECRET": "",
    "MAIL_IMAP_WRITE_ENABLED": "false",
    "MAIL_IMAP_DEFAULT_SEND_ENABLED": "false",
    "MAIL_IMAP_DEFAULT_RULES_ENABLED": "false",
    "MAIL_IMAP_DEFAULT_ALLOWED_RECIPIENTS": "",
    "MAIL_IMAP_DEFAULT_SMTP_HOST": "",
    "MAIL_IMAP_DEFAULT_SMTP_PORT": "",
    "MAIL_IMAP_DEFAULT_SMTP_SECURITY": "",
    "HOME": "/nonexistent",
}
