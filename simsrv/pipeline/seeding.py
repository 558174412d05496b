"""Named random streams of a run, all derived from the scenario's one seed.

Each part of the model draws from its own stream, so that changing one part (say, the
strategy) does not change the draws of another (the players' paths): strategy comparisons on the
same seed are paired (common random numbers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from simsrv.scenario.schema import RunSection

STREAMS = ("map", "players", "clients", "strategy", "machine", "combat", "wakeup")
"""Names of the streams, in spawn order (never reorder: it would change every result; new
streams go at the end, which leaves the earlier ones unchanged)."""


def spawn_streams(seed: int, map_seed: int | None = None) -> dict[str, np.random.Generator]:
    """One independent generator per name in :data:`STREAMS` for root ``seed``; with
    ``map_seed``, the ``map`` stream is the one root ``map_seed`` would give (the map of the
    run with that seed), the others stay those of ``seed``."""
    children = np.random.SeedSequence(seed).spawn(len(STREAMS))
    streams = {name: np.random.default_rng(s) for name, s in zip(STREAMS, children, strict=True)}
    if map_seed is not None and map_seed != seed:
        streams["map"] = spawn_streams(map_seed)["map"]
    return streams


def run_streams(run: RunSection) -> dict[str, np.random.Generator]:
    """The streams of a scenario's ``[run]`` section (its ``seed`` and ``map_seed``)."""
    return spawn_streams(run.seed, run.map_seed)
