"""Pseudo-relevance feedback for search by meaning: the description's vector moved towards the messages
it finds first, and searched again.

A description shares few words with the mail it means, and a static model averages its words, so its
vector points near the topic but not at it: the first one or two messages it finds (hubness reduced,
:mod:`mail_imap_mcp.meaning.hubness`) are mostly right, the rest of the topic far down. The rest of a
topic is near its first messages, which say it in its own words. So the description's vector is moved
by Rocchio's rule (the vector plus :data:`FEEDBACK_WEIGHT` times the mean of its first
:data:`FEEDBACK_MESSAGES` messages' vectors, of length 1 again) and the nearest messages are sought
again, their hubness reduced again. Pure numpy: no index, no model.

Chosen on half A of the meaning set's English paraphrases (tests/support/mail/meaning_set;
``scripts/meaning_methods --only feedback``): 2 messages and weight 1 were the best of 1-10 messages and
weights 0.25-3 there; on half B, not chosen on, ``about``'s recall at 10 rose from 0.73 to 0.77 (A:
0.50 to 0.82; ``scripts/meaning_recall``). Without hubness reduced first, feedback gained at most 0.05
where not chosen (``--only prf``): its first messages were the crowds of look-alikes, not the topic."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from mail_imap_mcp.meaning.hubness import message_vectors, unit_rows

if TYPE_CHECKING:
    import numpy.typing as npt

    Floats = npt.NDArray[np.float32]

#: The first messages by meaning whose vectors move the description's.
FEEDBACK_MESSAGES = 2
#: How far they move it: the weight of their mean beside the description's own vector (both of length 1).
FEEDBACK_WEIGHT = 1.0


def fed_back(vector: Floats, first: Sequence[Floats], *, weight: float = FEEDBACK_WEIGHT) -> Floats:
    """``vector`` (length 1) plus ``weight`` times the mean of ``first`` messages' vectors (each message's
    passages' rows, at any scale: its unit mean stands for it), of length 1 again; ``vector`` itself
    where ``first`` holds no rows."""
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    held = [rows for rows in first if len(rows)]
    if not held:
        return query
    messages = message_vectors(held, len(query))
    moved = query + weight * messages.mean(axis=0)
    found: Floats = unit_rows(moved[None, :])[0]
    return found
