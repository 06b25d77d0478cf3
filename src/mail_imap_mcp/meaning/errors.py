"""Why a search by meaning cannot be answered now, as a domain error the failure registry words
(``presentation/query_failures.py``)."""

from __future__ import annotations

#: The issue of a ranking by meaning where some messages have no vectors yet (ranked by their words).
MEANING_PARTIAL = "meaning_partial"


class MeaningNotReady(Exception):
    """The index cannot rank this account's mail by meaning now (being built, unavailable, no vectors in
    its engine, the model unable to run): the message says why."""


class MeaningFilterRefused(Exception):
    """A filter of a search by meaning that the index cannot answer, whatever the retry (the server answers
    it in any other search): the argument it comes from, and why (the message)."""

    def __init__(self, argument: str, why: str) -> None:
        super().__init__(why)
        self.argument = argument
