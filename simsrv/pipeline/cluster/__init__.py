"""The cluster simulation: several server nodes, each a modelled machine, serving the zones of
one world and exchanging over the interconnect model [V] (docs/cluster.md).

Modules, one responsibility each:

* :mod:`.zoning`: zoning rules by name (``grid``), which node owns a point;
* :mod:`.zones`: the world seen through the zoning, tick by tick (owners, border entities);
* :mod:`.socket`: a node's socket (hands a client's queued packets over);
* :mod:`.router`: client packets to their player's node, and handoffs;
* :mod:`.exchange`: messages on the interconnect and the CPU they cost in the nodes' frames;
* :mod:`.node`: one node (machine, strategy, frame builder, socket);
* :mod:`.simulation`: the cluster's event loop;
* :mod:`.metrics`: per-node, interconnect and aggregated metrics.
"""
