"""Asking the user, in one package: the records a tool or a service hands to its call's ``ask``
(:mod:`.records`), the one vocabulary of what the user answered (:mod:`.answers`), the pure choice of a way
(:mod:`.choose`), and the ways: MCP elicitation (a request back to the client, or an ``input_required``
result from 2026-07-28 on; the envelope layer asks it), a confirmation token (:mod:`.tokens`), and the
approval page in the user's browser (:mod:`.page`, in the call or in a background operation). The gate
(:mod:`.gate`) runs the way chosen for one call; :mod:`.ask` is ``app.ask``, the one entry point.

A tool imports :mod:`.records` alone: it gets :class:`~.records.Done` or :class:`~.records.Waiting` and
never learns which way was taken (``tests/unit/test_architecture.py``: no tool picks a route).
"""
