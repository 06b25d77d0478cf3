"""SMTP submission: a client on ``net/``'s sockets, TLS and SASL (:mod:`.client`), and what can go wrong
as domain errors (:mod:`.errors`), with the policy refusals of a send (:mod:`.refusals`). Imports nothing
of ``imap/`` or the layers above it."""
