"""Cost of server work in microseconds: each rule of the cost model, written once.

These functions are the cost model of [MODEL §1] (equations in ``docs/model.md``); strategies
decide where each piece runs.  Every planner charges its work through them: the Python planners
(``sequential`` through :mod:`~simsrv.strategies.phases`, ``bsp-group``) and the compiled
planners of ``abdelkhalek`` and ``area-quadrant`` alike, so that a rule cannot be re-typed in
one strategy and drift from the others (``tests/test_costs.py`` checks each strategy's plans
against them).  They are inlined into the compiled planners and compiled for Python callers
(:func:`simsrv.core.compiled.inlinable`) and take counts as integers or floats (the
arithmetic is the same).

The platform's cost parameters: the cost vector
-----------------------------------------------
The functions read the parameters of :class:`~simsrv.platforms.profile.Costs` by name from a
*cost vector* ``k``: a read-only numpy array of one record of :data:`COST_DTYPE`, one float64
field per field of ``Costs``, with the same names in the same order (derived from ``Costs``,
so the list of parameters exists once too); :func:`cost_vector` builds it.  Compiled code reads
``k[0].world_base``: numba compiles a record field to a load at a fixed offset, so every
parameter is read by name and no table of positions (``head[6]``) has to follow ``Costs``.

Why a record array rather than a :class:`typing.NamedTuple` of floats, which numba also reads
by name: the Python planners call a compiled function on every frame, and numba types its
arguments on every call from Python.  An array is typed from its dtype, once per call
(~0.4 us); a NamedTuple of 28 floats field by field (~3.5 us per call, numba 0.68), which
made the sequential planner's ``plan`` ~3x slower in a prototype (5 -> 14.5 us a frame; ~6 us
with the array).  The array is read-only,
so no compiled function can change the platform's costs, and it passes through
:func:`~simsrv.core.compiled.borrowing` helpers without reference counting.  Python reads it by
name too: ``k["world_base"][0]``.

So a Python planner makes one compiled call per frame: :func:`frame_costs` gives a whole
frame's costs at once (``sequential``), and the other planners compute theirs inside the
compiled planning call they already make.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simsrv.core.compiled import inlinable
from simsrv.platforms.profile import Costs

COST_DTYPE = np.dtype([(name, np.float64) for name in Costs.model_fields], align=True)
"""The record of a cost vector: one float64 field per field of
:class:`~simsrv.platforms.profile.Costs`, same names, same order, us."""


def with_scanned_entities(costs: Costs, scanned: int) -> Costs:
    """``costs`` with the scan of the server's entity list folded into the per-reply cost,
    us: ``reply_per_client + reply_per_scanned_entity * scanned`` (each reply tests
    ``scanned`` entities against the client's PVS, ``docs/model.md`` §3; the count is one per
    run, so the scan is a fixed part of every reply).  ``costs`` itself when the platform has
    no scan cost."""
    if costs.reply_per_scanned_entity == 0.0:
        return costs
    per_reply = costs.reply_per_client + costs.reply_per_scanned_entity * scanned
    return costs.model_copy(update={"reply_per_client": per_reply})


def cost_vector(costs: Costs) -> np.ndarray:
    """``costs`` as a cost vector: a read-only (1,) array of :data:`COST_DTYPE`, us."""
    vector = np.array([tuple(getattr(costs, name) for name in COST_DTYPE.names)], COST_DTYPE)
    vector.flags.writeable = False
    return vector


class FrameCosts(NamedTuple):
    """A frame's work on one CPU, us, phase by phase in ``SV_Frame``'s order
    (:func:`frame_costs`); each field is named after the activity the plans charge it to."""

    frame: float
    """Fixed frame work (``frame_overhead``)."""
    world: float
    """World physics (:func:`world_us`), 0 when it is not due."""
    net_recv: float
    """Receiving the frame's packets (:func:`net_recv_us`)."""
    request: float
    """Executing them (:func:`request_us`)."""
    reply_info: float
    """Scores and broadcasts to the connected clients (:func:`reply_info_us`)."""
    reply: float
    """Building the replies (:func:`reply_us`)."""
    net_send: float
    """Sending them (:func:`net_send_us`, plus :func:`send_wake_us`)."""


@inlinable
def world_us(k, entities):
    """World physics + game logic, us: ``world_base + world_per_entity * entities``."""
    return k[0].world_base + k[0].world_per_entity * entities


@inlinable
def net_recv_us(k, messages):
    """Receive system calls, us: ``net_recv_per_message * messages``."""
    return k[0].net_recv_per_message * messages


@inlinable
def request_us(k, messages, commands, range_entities):
    """Executing packets, us: per packet, per user command, per entity in the action ranges."""
    return (
        k[0].request_per_message * messages
        + k[0].request_per_command * commands
        + k[0].request_per_range_entity * range_entities
    )


@inlinable
def reply_info_us(k, connected):
    """Stage-3 part 1 (scores and broadcast messages to every connected client), per frame,
    us: ``reply_info_per_client * connected``."""
    return k[0].reply_info_per_client * connected


@inlinable
def reply_us(k, replies, visible_entities, pvs_rooms):
    """Building replies, us: per reply, per entity in the replied clients' visible sets, per
    room in their PVS rows."""
    return (
        k[0].reply_per_client * replies
        + k[0].reply_per_visible_entity * visible_entities
        + k[0].reply_per_pvs_room * pvs_rooms
    )


@inlinable
def net_send_us(k, replies):
    """Send system calls, us: ``net_send_per_reply * replies``."""
    return k[0].net_send_per_reply * replies


@inlinable
def send_wake_us(k, replies, receiver_idle):
    """Waking the replies' receiver, us: ``net_send_wake * receiver_idle`` for a frame that
    sends a reply (its first send finds the receiver asleep with probability
    ``receiver_idle``; the later ones find it awake), else 0 (docs/model.md, loopback
    replies)."""
    if replies == 0:
        return 0.0
    return k[0].net_send_wake * receiver_idle


@inlinable
def frame_costs(
    k, physics, entities, messages, commands, range_entities, connected, replies,
    visible_entities, pvs_rooms, receiver_idle,
):  # fmt: skip
    """The :class:`FrameCosts` of a frame run on one CPU, us, from its counts: whether world
    physics runs, the entities it simulates, the packets read with their user commands and
    action-range entities, the connected clients, the replies with their visible entities and
    PVS rooms; ``receiver_idle``: the probability that the replies' receiver sleeps
    (:func:`send_wake_us`)."""
    return FrameCosts(
        k[0].frame_overhead,
        world_us(k, entities) if physics else 0.0,
        net_recv_us(k, messages),
        request_us(k, messages, commands, range_entities),
        reply_info_us(k, connected),
        reply_us(k, replies, visible_entities, pvs_rooms),
        net_send_us(k, replies) + send_wake_us(k, replies, receiver_idle),
    )


@inlinable
def lock_us(k, locks, nodes):
    """Acquiring ``locks`` locks found by a walk of ``nodes`` areanode nodes, us:
    ``lock_acquire * locks + lock_per_node * nodes``."""
    return k[0].lock_acquire * locks + k[0].lock_per_node * nodes


@inlinable
def sort_us(k, messages, depth):
    """Sorting ``messages`` packets into the task queues of the areanode nodes at ``depth``
    (area-quadrant), us: per packet ``queue_per_message`` plus a walk of ``depth`` nodes
    (``lock_per_node`` each)."""
    return (k[0].queue_per_message + k[0].lock_per_node * depth) * messages


@inlinable
def resume_us(k):
    """Resuming a thread that shares its CPU, after a barrier, us: a context switch plus
    refilling its cold stack and state (``context_switch + thread_cache_refill``)."""
    return k[0].context_switch + k[0].thread_cache_refill


@inlinable
def grouping_us(k, messages, edges):
    """bsp-group's grouping beyond the action lists, us: per packet and per edge of the
    entity graph (``grouping_per_message``, ``grouping_per_edge``)."""
    return k[0].grouping_per_message * messages + k[0].grouping_per_edge * edges


@inlinable
def schedule_us(k, groups):
    """bsp-group's balancer, us: ``schedule_per_group * groups``."""
    return k[0].schedule_per_group * groups


@inlinable
def copy_us(k, entities):
    """Copying ``entities`` entity states to or from shared memory, us:
    ``copy_per_entity * entities``."""
    return k[0].copy_per_entity * entities


@inlinable
def cow_us(k, pages):
    """Copy-on-write faults of ``pages`` written pages, us: ``cow_per_page * pages``."""
    return k[0].cow_per_page * pages
