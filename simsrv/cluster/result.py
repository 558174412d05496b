"""A cluster run as one :class:`~simsrv.simulation.SimulationOutput`-like record for
:func:`simsrv.result.run`: the summary (:mod:`.metrics`), and frames and trace of every node
(one node: exactly its own; several: with a ``node`` column, and the trace's CPUs numbered
node by node, node ``k``'s CPU ``c`` as ``k * cpus + c``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from simsrv.cluster.metrics import summarize_cluster
from simsrv.cluster.simulation import simulate_cluster
from simsrv.scenario.schema import Scenario
from simsrv.trace_stream import TraceWindow


@dataclass
class ClusterRun:
    """What :func:`simsrv.result.run` keeps of a cluster run."""

    summary: dict[str, Any]
    frames: pd.DataFrame
    trace: pd.DataFrame | None
    accounting: dict[str, int]
    checks: dict[str, bool]


def run_cluster(scenario: Scenario, keep_trace: TraceWindow | None = None) -> ClusterRun:
    """Simulate and summarise a scenario with a ``[cluster]`` section (``keep_trace``: the
    rows of each node's trace kept, :func:`simsrv.simulation.simulate`)."""
    out = simulate_cluster(scenario, keep_trace=keep_trace)
    summary = summarize_cluster(scenario, out)
    if len(out.nodes) == 1:
        frames, trace = out.nodes[0].frames, out.nodes[0].trace
    else:
        cpus = scenario.machine.cpus
        frames = pd.concat(
            [n.frames.assign(node=k) for k, n in enumerate(out.nodes)], ignore_index=True
        )
        trace = (
            pd.concat(
                [n.trace.assign(cpu=n.trace["cpu"] + k * cpus) for k, n in enumerate(out.nodes)],
                ignore_index=True,
            )
            if keep_trace is not None
            else None
        )
    return ClusterRun(summary, frames, trace, out.accounting, out.checks)
