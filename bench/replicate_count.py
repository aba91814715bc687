"""What fewer bootstrap replicates cost a percentile interval's coverage (issue 29's bound).

The worker's intervals are 95% percentile intervals from 1,000 replicates; fewer would make a
window cheaper, and every interval's ends noisier. In the plainest case, where the percentile
interval is exact with infinitely many replicates (an estimate N(truth, 1), its bootstrap
distribution N(estimate, 1)), this measures the coverage at each replicate count with numpy's
quantiles, as app/metrics/percentiles.py cuts them:

    python -m bench.replicate_count --intervals 200000

It is a floor on the cost, not the cost on calmon's windows: their own coverage tables
(docs/evidence-*.md) would have to be run again at any new count.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

LEVEL = 0.95


def coverage(replicates: int, intervals: int, seed: int, chunk: int = 10_000) -> float:
    """Share of ``intervals`` percentile intervals from ``replicates`` replicates that hold the
    truth (0), each estimate drawn from N(0, 1) and its replicates from N(estimate, 1)."""
    rng = np.random.default_rng([29, replicates, seed])
    tail = (1.0 - LEVEL) / 2.0
    held = 0
    for start in range(0, intervals, chunk):
        size = min(chunk, intervals - start)
        estimate = rng.standard_normal(size)
        offsets = rng.standard_normal((size, replicates))
        low, high = np.quantile(offsets, [tail, 1.0 - tail], axis=1)
        held += int(np.sum((estimate + low <= 0.0) & (estimate + high >= 0.0)))
    return held / intervals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--intervals", type=int, default=200_000)
    parser.add_argument("--replicates", type=int, nargs="+", default=[100, 250, 500, 1000, 2000])
    parser.add_argument("--seed", type=int, default=48)
    args = parser.parse_args(argv)
    print(f"{args.intervals:,} intervals a count, nominal {LEVEL:.0%}, seed {args.seed}")
    print("| replicates | coverage | 95% interval |")
    print("| ---: | ---: | ---: |")
    for replicates in args.replicates:
        share = coverage(replicates, args.intervals, args.seed)
        half = 1.96 * math.sqrt(share * (1.0 - share) / args.intervals)
        print(f"| {replicates:,} | {share:.2%} | {share - half:.2%} to {share + half:.2%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
