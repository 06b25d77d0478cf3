"""Whether an account's built-in sign-in can work on this computer, said when the server starts.

The sign-in keeps its refresh token in the OS keychain (unless ``oauth2_token_file`` names a file). Where
no keychain is usable (a desktop without a Secret Service), no sign-in can be kept: the account is set
aside as not usable from the start (:meth:`~mail_imap_mcp.config.AccountConfig.add_fault`), named by the
setting that chose the sign-in (the bundle form's "Sign in with"), so that the listing says so and every
call answers it, not retryable, instead of a retryable failure at each call.
"""

from __future__ import annotations

from collections.abc import Mapping

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.config.errors import SettingFault

from .keychain import unusable_reason


def keeps_sign_in_in_keychain(account: AccountConfig) -> bool:
    """Whether ``account`` signs in itself and keeps the sign-in in the OS keychain."""
    return (
        account.oauth2_provider is not None
        and not account.oauth2_client_credentials
        and account.oauth2_token_file is None
        and not account.per_user
    )


def no_keychain_advice(account_id: str, account: AccountConfig) -> str:
    """What the user of a configuration file does where no keychain can keep ``account``'s sign-in: the
    same words from ``login``, ``check`` and the server."""
    example = f"~/.config/mail-imap-mcp/{account_id}.token"
    return (
        "on a machine without a keychain, keep the sign-in in a file only you can read: set "
        f"{account.setting('oauth2_token_file', example)}, then run login again (or start the system's "
        "keychain, e.g. GNOME Keyring)"
    )


def _named(account: AccountConfig, key: str) -> str:
    """The setting ``key`` as its user knows it: the bundle form's field label, else the setting."""
    label = account.label(key)
    return f'"{label}"' if label else account.setting(key)


def set_aside_sign_ins_without_keychain(accounts: Mapping[str, AccountConfig]) -> None:
    """Mark each of ``accounts`` whose sign-in would be kept in the keychain as not usable where no
    keychain is usable here (the keychain is asked only when there is such an account). An account set
    aside already is left as it is: its settings' problems come first, each said once corrected."""
    signing_in = [
        (account_id, account)
        for account_id, account in accounts.items()
        if keeps_sign_in_in_keychain(account) and not account.faults
    ]
    why = unusable_reason() if signing_in else None
    if why is None:
        return
    key = "oauth2_provider"
    for account_id, account in signing_in:
        if account.label(key) is None:  # a configuration file's: the file a machine without one keeps it in
            advice = no_keychain_advice(account_id, account)
        else:  # the bundle's form has no field for a file
            helper = _named(account, "oauth2_token_command")
            advice = f"start the system's keychain (e.g. GNOME Keyring), or use {helper}"
        reason = f"cannot sign in on this computer, which has no usable keychain to keep the sign-in ({why}): {advice}"
        account.add_fault(SettingFault(key, account.setting(key), account.label(key), reason))
