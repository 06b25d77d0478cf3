"""Search by meaning: a local text model (:mod:`.model`) turns what a message says into a vector, which
the index keeps beside its words; ``about`` and ``like`` rank by both. Nothing here touches a network."""
