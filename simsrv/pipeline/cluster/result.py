"""A cluster run as one :class:`~simsrv.pipeline.simulation.SimulationOutput`-like record for
:func:`simsrv.pipeline.result.run`: the summary (:mod:`.metrics`), and frames and trace of every
node (one node: exactly its own; several: with a ``node`` column, and the trace's CPUs numbered
node by node, node ``k``'s CPU ``c`` as ``k * cpus + c``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import pandas as pd

from simsrv.pipeline.cluster.metrics import summarize_cluster
from simsrv.pipeline.cluster.simulation import simulate_cluster
from simsrv.pipeline.keep_window import KeepWindow
from simsrv.scenario.schema import Scenario
from simsrv.workload.response_time import ResponseTimes


@dataclass
class ClusterRun:
    """What :func:`simsrv.pipeline.result.run` keeps of a cluster run."""

    summary: dict[str, Any]
    frames: pd.DataFrame | None
    trace: pd.DataFrame | None
    accounting: dict[str, int]
    checks: dict[str, bool]
    group_sizes: dict[int, int]
    response: ResponseTimes


def run_cluster(
    scenario: Scenario,
    keep_trace: KeepWindow | None = None,
    keep_frames: KeepWindow | None = None,
) -> ClusterRun:
    """Simulate and summarise a scenario with a ``[cluster]`` section (``keep_trace``,
    ``keep_frames``: the rows of each node's trace and the frames kept,
    :func:`simsrv.pipeline.simulation.simulate`)."""
    out = simulate_cluster(scenario, keep_trace=keep_trace, keep_frames=keep_frames)
    summary = summarize_cluster(scenario, out)
    sizes: Counter[int] = Counter()
    for node in out.nodes:
        sizes.update(node.frame_digest.group_sizes)
    if len(out.nodes) == 1:
        frames, trace = out.nodes[0].frames, out.nodes[0].trace
    else:
        cpus = scenario.machine.cpus
        frames = (
            pd.concat([n.frames.assign(node=k) for k, n in enumerate(out.nodes)], ignore_index=True)
            if keep_frames is not None
            else None
        )
        trace = (
            pd.concat(
                [n.trace.assign(cpu=n.trace["cpu"] + k * cpus) for k, n in enumerate(out.nodes)],
                ignore_index=True,
            )
            if keep_trace is not None
            else None
        )
    sizes_sorted = dict(sorted(sizes.items()))
    return ClusterRun(
        summary, frames, trace, out.accounting, out.checks, sizes_sorted, out.response
    )
