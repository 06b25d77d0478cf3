"""The suite's own plumbing: collection, the CPU report, each test's home, the run's lifetime, bytecode ahead
of the workers, processes, and the README's snippets."""
