"""The benchmark behind ``scripts/bench`` (see ``scripts/bench.py`` for what one run does).

Modules, each importing only those before it: ``common`` (paths, constants, timing series),
``servers`` (our server over stdio, the peer, /proc), ``scenarios`` (seeding, the raw-IMAP floor, the
operations measured per mailbox size), ``report`` (tables, targets, charts, the docs section),
``network`` (the same calls through an emulated link) and ``cli`` (options and the run).
"""
