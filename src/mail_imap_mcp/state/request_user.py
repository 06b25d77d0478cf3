"""The user a request names: the one its HTTP access token names (``[http.auth]``), else nobody in
particular (stdio, the static bearer token: one person's server), and how the store keys them. Who a call
is then made for, with their accounts, is :mod:`.caller`'s record."""

from __future__ import annotations

import hashlib

#: The user of a one-person server (stdio, a static bearer token): every account is theirs.
ANONYMOUS = ""


def user_tag(user: str) -> str:
    """``user`` as the store names them: a hash of the name, so keys neither grow with it nor show it to
    whoever lists the store's keys; ``-`` for nobody in particular."""
    return hashlib.sha256(user.encode()).hexdigest()[:24] if user else "-"


def user_key(kind: str, *parts: str, user: str) -> str:
    """The store key of ``kind`` for ``user`` (:func:`user_tag`)."""
    return ":".join(("mim", kind, user_tag(user), *parts))


#: Where the HTTP transport puts the user's name among the claims of the access token it verified
#: (:mod:`mail_imap_mcp.transport.oauth`).
USER_CLAIM = "mail_imap_mcp/user"
#: Where it puts the name as the token spelled it, before folding (``Alice@`` where the user is
#: ``alice@``): what an earlier version keyed the user's index file by.
USER_AS_GIVEN_CLAIM = "mail_imap_mcp/user_as_given"


def _claim(context: object, claim: str) -> str:
    try:
        inner = getattr(context, "request_context", context)
    except ValueError:  # the SDK's Context outside of a request
        return ANONYMOUS
    request = getattr(inner, "request", None)
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    claims = getattr(getattr(user, "access_token", None), "claims", None)
    name = claims.get(claim) if isinstance(claims, dict) else None
    return name if isinstance(name, str) else ANONYMOUS


def user_of(context: object) -> str:
    """The user a request was authenticated as: read from an MCP request context (the SDK's tool or
    resource ``Context``, or a lowlevel ``ServerRequestContext``) whose HTTP request carries a verified
    access token; :data:`ANONYMOUS` for stdio, in-process clients and the static bearer token."""
    return _claim(context, USER_CLAIM)


def user_as_given(context: object) -> str:
    """The user's name as the request's token spelled it, before folding (:func:`user_of` folded);
    :data:`ANONYMOUS` where no token names one."""
    return _claim(context, USER_AS_GIVEN_CLAIM) or user_of(context)
