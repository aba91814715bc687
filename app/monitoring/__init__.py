"""Domain rules with no I/O: pi0 policy, maturity, references, the drop detector, verdicts.

The worker reads and writes; this package decides. It imports app.metrics and nothing else of
the app (docs/interfaces.md).
"""
