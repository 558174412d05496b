"""The ``graph-partition`` balancer: recursive Kernighan-Lin bisection of the frame's
interaction graph, weighted by entities.

The processors are split in two halves (``m // 2`` and the rest) and the graph's vertices
(one per entity: :mod:`simsrv.strategies.grouping.interaction_graph`) in two parts of proportional
sizes, first in entity-id order; Kernighan-Lin (networkx's ``kernighan_lin_bisection``, swaps
that keep the part sizes) then moves the parts to cut as few interaction edges (weighted by
packets) as it can.  A group must run in one process (its entities interact), so every group
then goes whole to the part holding most of its entities (ties: the first).  Each part is
bisected again with its processors until one processor is left.  The ``m`` parts go to the
processors by decreasing entity count against increasing initial load (ties: lowest number).

Groups of one frame never share an edge, so the best cut keeps every group whole; what the
bisection adds over LPT is that it places groups by where they sit in the graph, not by size
alone.  Without the frame's graph (``groups=None``) each job stands for a chain of
``round(weight)`` vertices (at least one).  Deterministic: the starting parts are fixed, and
networkx only draws random numbers for a missing starting partition.  Cost: networkx and
Python per frame, ~O(E log V) per pass, at most :data:`MAX_PASSES` passes per bisection.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simsrv.core.uninitialised import empty
from simsrv.strategies.grouping.balancers import BALANCERS
from simsrv.strategies.grouping.groups import FrameGroups
from simsrv.strategies.grouping.interaction_graph import interaction_graph

MAX_PASSES = 10
"""Kernighan-Lin passes per bisection (networkx's ``max_iter``)."""


def graph_partition(
    weights: np.ndarray, initial_loads: Sequence[float], groups: FrameGroups | None = None
) -> np.ndarray:
    """Each job's processor (module docstring); ``weights[j]`` is job ``j``'s entity count."""
    m, jobs = len(initial_loads), len(weights)
    if jobs == 0:
        return np.zeros(0, dtype=np.int64)
    if m == 1:
        return np.zeros(jobs, dtype=np.int64)
    graph, job_of = _graph(weights, groups)
    part_of_job = np.zeros(jobs, dtype=np.int64)
    _bisect(graph, job_of, sorted(graph.nodes), list(range(m)), part_of_job, jobs)
    loads = np.bincount(part_of_job, np.asarray(weights, dtype=float), minlength=m)
    parts = sorted(range(m), key=lambda p: (-loads[p], p))
    processors = sorted(range(m), key=lambda p: (float(initial_loads[p]), p))
    processor_of_part = empty(m, dtype=np.int64)
    processor_of_part[parts] = processors
    return processor_of_part[part_of_job]


def _graph(weights: np.ndarray, groups: FrameGroups | None):
    """The graph and each vertex's job."""
    import networkx as nx

    if groups is not None and groups.source is not None:
        graph = interaction_graph(groups)
        return graph, {v: data["group"] for v, data in graph.nodes(data=True)}
    graph, job_of, vertex = nx.Graph(), {}, 0
    for job, weight in enumerate(np.asarray(weights, dtype=float).tolist()):
        chain = list(range(vertex, vertex + max(1, round(weight))))
        graph.add_nodes_from(chain)
        nx.add_path(graph, chain)
        job_of.update(dict.fromkeys(chain, job))
        vertex += len(chain)
    return graph, job_of


def _bisect(graph, job_of: dict, vertices: list, procs: list[int], out: np.ndarray, jobs: int):
    """Assign the jobs of ``vertices`` to parts ``procs`` (recursively), into ``out``."""
    if len(procs) == 1 or not vertices:
        for v in vertices:
            out[job_of[v]] = procs[0]
        return
    from networkx.algorithms.community import kernighan_lin_bisection

    left_procs, right_procs = procs[: len(procs) // 2], procs[len(procs) // 2 :]
    k = round(len(vertices) * len(left_procs) / len(procs))
    left, right = set(vertices[:k]), set(vertices[k:])
    if left and right:
        left, right = kernighan_lin_bisection(
            graph.subgraph(vertices), partition=(left, right), max_iter=MAX_PASSES, weight="weight"
        )
    in_left = np.zeros(jobs, dtype=np.int64)
    total = np.zeros(jobs, dtype=np.int64)
    for v in vertices:
        total[job_of[v]] += 1
        in_left[job_of[v]] += v in left
    goes_left = 2 * in_left >= total
    _bisect(graph, job_of, [v for v in vertices if goes_left[job_of[v]]], left_procs, out, jobs)
    _bisect(
        graph, job_of, [v for v in vertices if not goes_left[job_of[v]]], right_procs, out, jobs
    )


BALANCERS.register("graph-partition", graph_partition)
