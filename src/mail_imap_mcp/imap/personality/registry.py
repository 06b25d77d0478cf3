"""Which personality a server gets: the first registered one that fits its profile, else the standard."""

from __future__ import annotations

from mail_imap_mcp.imap.personality.gmail import Gmail
from mail_imap_mcp.imap.personality.profile import Profile
from mail_imap_mcp.imap.personality.standard import Personality

#: The personalities other than the standard one, asked in order; the first that fits a server is its.
PERSONALITIES: tuple[type[Personality], ...] = (Gmail,)


def personality_for(profile: Profile) -> Personality:
    """The personality of a server with ``profile``: the first of :data:`PERSONALITIES` that fits it,
    else the standard one."""
    chosen = next((kind for kind in PERSONALITIES if kind.fits(profile)), Personality)
    return chosen(profile)
