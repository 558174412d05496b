"""Concentration areas: places that attract players (weapons, armour, a pit one cannot leave).

An attractor is a disc on the floor: a centre, a radius and a weight (its share of the players
that choose an attractor by weight).  Attractors may move (SynQuake's ``4moving`` layout): each
travels at a constant velocity and bounces off the map's extent, so its centre at time ``t`` is
a deterministic function of ``t`` (no random stream involved).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def _zeros(*shape: int) -> np.ndarray:
    return np.zeros(shape)


@dataclass(frozen=True)
class Attractors:
    """A set of ``A`` concentration areas.

    Attributes
    ----------
    centres:
        (A, 3) centres at t = 0, units (z: a standing player's origin on that floor).
    radius:
        (A,) radius of each area, units.
    weight:
        (A,) relative weight (> 0); normalised by :attr:`probabilities`.
    velocity:
        (A, 2) horizontal velocity, units/s (zero for fixed areas).
    """

    centres: np.ndarray = field(default_factory=lambda: _zeros(0, 3))
    radius: np.ndarray = field(default_factory=lambda: _zeros(0))
    weight: np.ndarray = field(default_factory=lambda: _zeros(0))
    velocity: np.ndarray = field(default_factory=lambda: _zeros(0, 2))

    def __len__(self) -> int:
        return len(self.centres)

    @property
    def probabilities(self) -> np.ndarray:
        """(A,) weights normalised to sum to 1."""
        return self.weight / self.weight.sum()

    @property
    def moving(self) -> bool:
        """Whether any area moves."""
        return bool(np.any(self.velocity))

    def at(self, t_s: float, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """(A, 3) centres at time ``t_s``, bouncing between ``lo`` and ``hi`` (x, y only).

        The disc stays inside: its centre moves in ``[lo + radius, hi - radius]`` and reflects
        at the ends (a triangle wave of the unbounded motion).
        """
        if not self.moving or t_s == 0.0:
            return self.centres
        low = lo[:2] + self.radius[:, None]
        span = np.maximum(hi[:2] - self.radius[:, None] - low, 1e-9)
        free = self.centres[:, :2] - low + self.velocity * t_s
        folded = np.mod(free, 2 * span)
        xy = low + np.where(folded > span, 2 * span - folded, folded)
        return np.column_stack([xy, self.centres[:, 2]])

    def choose(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """``count`` attractor indices drawn by weight, (count,) int."""
        if np.all(self.weight == self.weight[0]):
            return rng.integers(0, len(self), count)  # equal weights: one uniform draw each
        return rng.choice(len(self), size=count, p=self.probabilities)

    def nearest(self, points: np.ndarray, centres: np.ndarray | None = None) -> np.ndarray:
        """Index of the attractor whose centre is nearest (x, y) to each point, (N,) int."""
        c = self.centres if centres is None else centres
        return np.argmin(((points[:, None, :2] - c[None, :, :2]) ** 2).sum(axis=2), axis=1)

    def points_in(
        self, which: np.ndarray, rng: np.random.Generator, centres: np.ndarray | None = None
    ) -> np.ndarray:
        """A uniform point of the disc of each attractor in ``which``, (n, 2) units."""
        c = self.centres if centres is None else centres
        n = len(which)
        angle = rng.uniform(0.0, 2 * np.pi, n)
        r = self.radius[which] * np.sqrt(rng.random(n))
        return c[which, :2] + np.column_stack([r * np.cos(angle), r * np.sin(angle)])


def fixed_attractors(centres: np.ndarray, radius: float, weight: float = 1.0) -> Attractors:
    """Equal-radius, equal-weight, fixed attractors at ``centres`` (A, 3)."""
    a = len(centres)
    return Attractors(
        centres=np.asarray(centres, dtype=float).reshape(a, 3),
        radius=np.full(a, float(radius)),
        weight=np.full(a, float(weight)),
        velocity=np.zeros((a, 2)),
    )
