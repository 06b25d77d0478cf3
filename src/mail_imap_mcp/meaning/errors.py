"""Why a search by meaning cannot be answered now, as a domain error the failure registry words
(``presentation/query_failures.py``)."""

from __future__ import annotations


class MeaningNotReady(Exception):
    """The index cannot rank this account's mail by meaning now (being built, unavailable, no vectors in
    its engine, the model unable to run, a filter it cannot answer): the message says why."""
