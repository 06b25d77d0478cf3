"""The MCP Bundle's form (Claude Desktop's settings of the extension): each field, the ``MAIL_IMAP_DEFAULT_*``
variable it sets and what the manifest says of it. ``scripts/mcpb`` writes it into the bundle's manifest;
the server names a setting the form sets by the field's label, the words its user saw."""

from __future__ import annotations

from typing import Any

from .switches import DOWNLOAD_DIR, INDEX, RULES_ENABLED, SEND_ENABLED, UNSUBSCRIBE_ENABLED, WRITE_ENABLED

#: The bundle's form: key -> (the variable it sets, what the manifest says of the field).
BUNDLE_FORM: dict[str, tuple[str, dict[str, Any]]] = {
    "email_address": (
        "MAIL_IMAP_DEFAULT_ADDRESSES",
        {
            "type": "string",
            "title": "Email address",
            "description": "Your address, e.g. you@gmail.com. At Gmail, iCloud, Yahoo, AOL, Fastmail, Microsoft "
            "365/Outlook.com and Proton Mail (Bridge) the server finds the IMAP host from it.",
            "required": True,
        },
    ),
    "password": (
        "MAIL_IMAP_DEFAULT_PASS",
        {
            "type": "string",
            "title": "Password or app password",
            "description": "Kept in your system keychain. Gmail, iCloud, Yahoo and Fastmail need an app "
            "password, not the account password. Leave empty when you sign in with a token command.",
            "sensitive": True,
            "required": False,
            "default": "",
        },
    ),
    "imap_host": (
        "MAIL_IMAP_DEFAULT_HOST",
        {
            "type": "string",
            "title": "IMAP server (optional)",
            "description": "Leave empty at a known provider; else your IMAP server's host name, e.g. "
            "mail.example.org.",
            "required": False,
            "default": "",
        },
    ),
    "imap_port": (
        "MAIL_IMAP_DEFAULT_PORT",
        {
            "type": "string",
            "title": "IMAP port (optional)",
            "description": "Leave empty for the provider's port, else 993 with TLS and 143 with STARTTLS.",
            "required": False,
            "default": "",
        },
    ),
    "security": (
        "MAIL_IMAP_DEFAULT_SECURITY",
        {
            "type": "string",
            "title": "Connection security (optional)",
            "description": "tls (the default), starttls, or plain (only for a server on this computer).",
            "required": False,
            "default": "",
        },
    ),
    "username": (
        "MAIL_IMAP_DEFAULT_USER",
        {
            "type": "string",
            "title": "Username (optional)",
            "description": "The login name, when it is not your email address.",
            "required": False,
            "default": "",
        },
    ),
    "sign_in": (
        "MAIL_IMAP_DEFAULT_OAUTH2_PROVIDER",
        {
            "type": "string",
            "title": "Sign in with (optional)",
            "description": "microsoft or google: sign in in your browser, which opens the first time the "
            "server needs it (leave the password empty; give the client ID below). Empty: log in with the "
            "password, or with the token command.",
            "required": False,
            "default": "",
        },
    ),
    "oauth2_client_id": (
        "MAIL_IMAP_DEFAULT_OAUTH2_CLIENT_ID",
        {
            "type": "string",
            "title": "OAuth client ID (with Sign in with)",
            "description": "The application (client) ID you or your organisation registered with Microsoft "
            "or Google for this server (docs/providers.md says how).",
            "required": False,
            "default": "",
        },
    ),
    "oauth2_client_secret": (
        "MAIL_IMAP_DEFAULT_OAUTH2_CLIENT_SECRET",
        {
            "type": "string",
            "title": "OAuth client secret (Google only)",
            "description": "Google gives desktop clients a secret with the client ID; kept in your system "
            "keychain. Microsoft needs none.",
            "sensitive": True,
            "required": False,
            "default": "",
        },
    ),
    "oauth2_tenant": (
        "MAIL_IMAP_DEFAULT_OAUTH2_TENANT",
        {
            "type": "string",
            "title": "Microsoft tenant (optional)",
            "description": "With Sign in with microsoft: your organisation's tenant ID or domain (e.g. "
            "contoso.onmicrosoft.com) when its app is for that organisation only. Empty: common.",
            "required": False,
            "default": "",
        },
    ),
    "oauth2_token_command": (
        "MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND",
        {
            "type": "string",
            "title": "OAuth2 token command (optional)",
            "description": "Instead of Sign in with, a token helper you run yourself: a command printing an "
            "access token, e.g. pizauth show work (docs/providers.md). Leave the password empty then.",
            "required": False,
            "default": "",
        },
    ),
    "ca_file": (
        "MAIL_IMAP_DEFAULT_CA_FILE",
        {
            "type": "file",
            "title": "Server certificate (optional)",
            "description": "A PEM certificate to trust, for Proton Mail Bridge or a self-signed server.",
            "required": False,
            "default": "",
        },
    ),
    "local_index": (
        INDEX.form_variable,
        {
            "type": "boolean",
            "title": "Keep a local index",
            "description": "Keep a local index of your mail: faster ranked search, and search by meaning "
            "in 16 languages (English, German, French, Spanish, Italian, Dutch, Portuguese, Polish...).",
            "required": False,
            "default": False,
        },
    ),
    "allow_writes": (
        WRITE_ENABLED.form_variable,
        {
            "type": "boolean",
            "title": "Allow changes to mail",
            "description": "Flags, moves, deletions (to Trash), folders and drafts. Off: the server only reads.",
            "required": False,
            "default": False,
        },
    ),
    "attachment_folder": (
        "MAIL_IMAP_ATTACHMENT_DIRS",
        {
            "type": "directory",
            "title": "Folder of files to attach (optional)",
            "description": "Drafts may attach files from this folder and below, and from nowhere else. "
            "Empty: no file of this computer is attached.",
            "required": False,
            "default": "",
        },
    ),
    "download_folder": (
        DOWNLOAD_DIR.form_variable,
        {
            "type": "directory",
            "title": "Folder to save attachments to (optional)",
            "description": "Attachments are saved here when you ask, each as a new file, never over one. "
            "Empty: nothing is saved.",
            "required": False,
            "default": "",
        },
    ),
    "allow_unsubscribe": (
        UNSUBSCRIBE_ENABLED.form_variable,
        {
            "type": "boolean",
            "title": "Allow unsubscribing from mailing lists",
            "description": "Leaves a list only after you approve it: one web request to the list's own "
            "verified address, or a mail you approve again. Off: the server makes no web request.",
            "required": False,
            "default": False,
        },
    ),
    "allow_rules": (
        RULES_ENABLED.form_variable,
        {
            "type": "boolean",
            "title": "Allow rules on your mail server",
            "description": "Rules your server runs as mail arrives (Sieve), e.g. file the school's mail in "
            "School, each tried on your mail first; your own rules are kept. Needs ManageSieve (not Gmail, "
            "Microsoft 365 or iCloud). Off: no rule is read or changed.",
            "required": False,
            "default": False,
        },
    ),
    "allow_sending": (
        SEND_ENABLED.form_variable,
        {
            "type": "boolean",
            "title": "Allow sending drafts",
            "description": "Sends a saved draft only after you approve that very message in your browser, "
            "and only to the recipients allowed below. Off: nothing is ever sent.",
            "required": False,
            "default": False,
        },
    ),
    "allowed_recipients": (
        "MAIL_IMAP_DEFAULT_ALLOWED_RECIPIENTS",
        {
            "type": "string",
            "title": "Who may be sent mail",
            "description": "Needed to allow sending: addresses and domains, comma-separated, e.g. "
            "bob@example.org, @example.com (that domain), *.example.com (its subdomains); * for anyone.",
            "required": False,
            "default": "",
        },
    ),
    "smtp_host": (
        "MAIL_IMAP_DEFAULT_SMTP_HOST",
        {
            "type": "string",
            "title": "SMTP server (optional)",
            "description": "Leave empty at a known provider; else your submission server's host name, e.g. "
            "smtp.example.org.",
            "required": False,
            "default": "",
        },
    ),
    "smtp_port": (
        "MAIL_IMAP_DEFAULT_SMTP_PORT",
        {
            "type": "string",
            "title": "SMTP port (optional)",
            "description": "Leave empty for the provider's port, else 465 with TLS and 587 with STARTTLS.",
            "required": False,
            "default": "",
        },
    ),
    "smtp_security": (
        "MAIL_IMAP_DEFAULT_SMTP_SECURITY",
        {
            "type": "string",
            "title": "SMTP security (optional)",
            "description": "tls (the default), starttls, or plain (only for a server on this computer).",
            "required": False,
            "default": "",
        },
    ),
}


#: Variable -> the label of the form field that sets it.
_LABELS = {variable: str(field["title"]) for variable, field in BUNDLE_FORM.values()}


def form_label(variable: str) -> str | None:
    """The label of the bundle form's field that sets ``variable``; None where no field sets it."""
    return _LABELS.get(variable)
