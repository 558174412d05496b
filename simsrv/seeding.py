"""Named random streams of a run, all derived from the scenario's one seed.

Each part of the model draws from its own stream, so that changing one part (say, the
strategy) does not change the draws of another (the players' paths): strategy comparisons on the
same seed are paired (common random numbers).
"""

from __future__ import annotations

import numpy as np

STREAMS = ("map", "players", "clients", "strategy", "machine", "combat")
"""Names of the streams, in spawn order (never reorder: it would change every result; new
streams go at the end, which leaves the earlier ones unchanged)."""


def spawn_streams(seed: int) -> dict[str, np.random.Generator]:
    """One independent generator per name in :data:`STREAMS` for root ``seed``."""
    children = np.random.SeedSequence(seed).spawn(len(STREAMS))
    return {name: np.random.default_rng(s) for name, s in zip(STREAMS, children, strict=True)}
