"""Work decomposition for parallel strategies: entity groups and the balancers that place them.

:mod:`~simsrv.strategies.grouping.groups` builds the frame's interaction graph and its connected
components; :mod:`~simsrv.strategies.grouping.balancers` assigns weighted jobs to processors
(:mod:`~simsrv.strategies.grouping.graph_partition`, imported here so that its balancer is
registered, partitions the frame's interaction graph).  Plain numpy/networkx functions: no simulated
time here.
"""

from simsrv.strategies.grouping import graph_partition  # noqa: F401  (registers "graph-partition")
