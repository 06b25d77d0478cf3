"""The name a model's vectors are recorded under in the index: vectors recorded under another name (another
model, or the passages of another version) are made again, in the background (index/sync_vectors.py)."""

from __future__ import annotations

#: The version of what of each message is embedded (:mod:`mail_imap_mcp.index.passages`). 2: passages
#: without the sender's name (issue 89: it made a sender's mail near all of its own, whatever the topic).
PASSAGES_VERSION = 2


def recorded_name(model: str) -> str:
    """The name the vectors of ``model`` are recorded under: the model's and the passages' version."""
    return f"{model}+passages{PASSAGES_VERSION}"
