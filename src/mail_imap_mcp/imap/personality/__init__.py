"""What a server can do and how it differs: read once per connection, asked everywhere else.

:class:`Profile` turns a CAPABILITY answer into named facts (``profile.moves``, ``profile.sorts``...),
so no module but this one, ``session.py`` and ``wire.py`` tests a capability string: a server that
advertises an extension by another spelling, or one whose extension is known broken, is handled here
once. The standard personality is what every server of the test matrix gets; a server whose meaning
differs (Gmail: COPY adds a label, delete means Trash, All Mail holds every message) becomes a
:class:`Personality` of its own here (:mod:`.standard` has the hooks), not a branch in a tool.
"""

from mail_imap_mcp.imap.personality.profile import Profile
from mail_imap_mcp.imap.personality.registry import PERSONALITIES, personality_for
from mail_imap_mcp.imap.personality.standard import Personality

__all__ = ["PERSONALITIES", "Personality", "Profile", "personality_for"]
