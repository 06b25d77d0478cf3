"""mail-imap-mcp: an MCP server for IMAP mail (docs/architecture.md draws the house)."""

import os

# numpy's OpenBLAS gives every matrix product a thread per core, which spins on after it. Search by meaning's
# products are small and come in bursts beside the server's own work: on this project's two-core machine its
# hubness reference, found again after a tenth of the index changed, took twice as long at the median with the
# threads as without (docs/benchmarks.md, "numpy on one thread"). Set before numpy loads (at search by meaning's
# first use); a user's own setting is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
