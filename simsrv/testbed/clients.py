"""Synthetic QuakeWorld clients: sign on, play at a set rate and phase pattern, disconnect.

All clients run in one loop in the calling process (which the harness pins to a CPU other
than the server's), each with its own connected UDP socket.  The loop sends every due
client's packet at its own times ``t0 + phase_i + k / rate_hz`` before it reads any reply;
the phase pattern decides ``phase_i``:

- ``step``: every client at the same instant (phase 0);
- ``independent``: each client its own phase, uniform in one period;
- ``hosts:H``: clients spread round-robin over H hosts, each host one uniform phase, the
  host's clients sent back to back at that instant (simsrv's ``clients.hosts`` with
  ``host_burst_s = 0``).

What a client does while playing is the automated player of Cordeiro et al. [P §5]: in a
cycle of 20 client frames it stands for 10, walks for 10 and, after 5 frames of walking,
takes one action drawn at random (jump, fire, or a new heading).  Each client's choices come
from its own seeded generator.
"""

from __future__ import annotations

import heapq
import math
import re
import select
import socket
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simsrv.testbed import protocol as qw
from simsrv.world.mobility.quake_bot import ACTION_JUMP, ACTION_SHOT, QuakeBotParams

PHASES = ("step", "independent", "hosts")
MAX_HOSTS = 256
"""The most hosts ``hosts:H`` puts the clients on (one client a host at most: 256)."""
SIGNON_RESEND_S = 0.5
SIGNON_SPACING_S = 0.05
SPIN_S = 0.0003  # the last stretch before a send is polled, not slept (see _drive)
ORIGIN_HZ = 10.0  # how often a playing client parses a reply to record its origin
WALK_SPEED = 320  # sv_maxspeed
SCHEDULE = QuakeBotParams()  # the scenario's quake-bot defaults: the clients play the same
RATE_BYTES_PER_S = 300_000
"""The clients' ``rate``: mvdsv's largest (``SV_BoundRate``: 100000 x MAX_DUPLICATE_PACKETS).
A reply is at most 1,450 bytes (MAX_DATAGRAM), so at 77 Hz bandwidth control never chokes
one (100000 did from ~40 clients on dm1, where every reply carries most players)."""


@dataclass(frozen=True)
class PhasePattern:
    """How client send times are placed in each period (see the module docstring)."""

    kind: str
    hosts: int = 0

    @classmethod
    def parse(cls, text: str) -> PhasePattern:
        from simsrv.core.errors import InputError

        if not isinstance(text, str):
            raise InputError(
                f"testbed --phases must be one of step, independent, hosts:H; got {text!r}"
            )
        kind, _, arg = text.partition(":")
        if kind not in PHASES:
            raise InputError(
                f"testbed --phases must be one of step, independent, hosts:H; got {text!r}"
            )
        if kind == "hosts":
            if not re.fullmatch(r"[0-9]{1,4}", arg) or not 1 <= int(arg) <= MAX_HOSTS:
                raise InputError(
                    f"testbed --phases hosts:H needs a whole number H in [1, {MAX_HOSTS}], "
                    f"got {text!r}"
                )
            return cls("hosts", int(arg))
        if arg:
            raise InputError(f"testbed --phases {kind} takes no argument, got {text!r}")
        return cls(kind)

    def label(self) -> str:
        return f"hosts:{self.hosts}" if self.kind == "hosts" else self.kind

    def phases(self, clients: int, period_s: float, rng: np.random.Generator) -> np.ndarray:
        """Each client's send phase in seconds, in [0, period_s)."""
        if self.kind == "step":
            return np.zeros(clients)
        if self.kind == "independent":
            return rng.uniform(0.0, period_s, clients)
        host_phase = rng.uniform(0.0, period_s, self.hosts)
        return host_phase[np.arange(clients) % self.hosts]


@dataclass
class ClientLog:
    """What one client saw: send times, reply times and round trips, its origins."""

    index: int
    move_times: list[float] = field(default_factory=list)
    reply_times: list[float] = field(default_factory=list)
    round_trips: list[float] = field(default_factory=list)
    origins: list[tuple[float, float, float, float]] = field(default_factory=list)
    began_at: float | None = None
    connected_at: float | None = None
    parse_errors: int = 0
    playernum: int | None = None


class Bot:
    """The automated player [P §5] with simsrv's ``quake-bot`` schedule (its defaults:
    stand 10 frames, walk 5, one action drawn from jump / fire / new heading, walk 5)."""

    def __init__(self, rng: np.random.Generator, schedule: QuakeBotParams = SCHEDULE) -> None:
        self.rng = rng
        self.idle = schedule.idle_ticks
        self.action_at = schedule.idle_ticks + schedule.walk_before_action
        self.cycle = self.action_at + schedule.walk_after_action
        self.frame = int(rng.integers(0, self.cycle))
        self.yaw = float(rng.uniform(0, 360))

    def next_command(self, msec: int) -> qw.UserCmd:
        step = self.frame % self.cycle
        self.frame += 1
        walking = step >= self.idle
        buttons = 0
        if step == self.action_at:
            action = int(self.rng.integers(0, 3))
            if action == ACTION_JUMP:
                buttons = qw.BUTTON_JUMP
            elif action == ACTION_SHOT:
                buttons = qw.BUTTON_ATTACK
            else:
                self.yaw = (self.yaw + float(self.rng.uniform(45, 315))) % 360
        return qw.UserCmd(
            msec=msec,
            angles=(0.0, self.yaw, 0.0),
            forward=WALK_SPEED if walking else 0,
            buttons=buttons,
        )


class _Client:
    def __init__(
        self,
        index: int,
        table: bytes,
        rng: np.random.Generator,
        msec: int,
        name: str,
        rate_hz: float,
    ) -> None:
        self.log = ClientLog(index)
        self.table, self.bot, self.msec, self.name = table, Bot(rng), msec, name
        self.chan = qw.Netchan(qport=(index * 7919 + 1234) & 0xFFFF)
        self.state = "challenge"
        self.servercount = 0
        self.transport: socket.socket | None = None
        self.cmds = [qw.NULL_CMD, qw.NULL_CMD, qw.NULL_CMD]
        self.sent_at: dict[int, float] = {}
        self.last_oob = -math.inf
        self.begin_sent = False
        self.replies = 0
        self.last_command = ""
        self.last_parse_error = ""
        self.origin_every = max(1, round(rate_hz / ORIGIN_HZ))

    # -- receiving ---------------------------------------------------------------------------
    def datagram_received(self, data: bytes) -> None:
        now = time.monotonic()
        if data.startswith(qw.CONNECTIONLESS):
            self._connectionless(data[4:], now)
            return
        payload = self.chan.process(data)
        if payload is None:
            return
        sent = self.sent_at.pop(self.chan.incoming_acknowledged, None)
        if self.state == "active":
            if sent is not None:
                self.log.reply_times.append(now)
                self.log.round_trips.append(now - sent)
            # While playing, a reply is parsed only when it carries reliable data (string
            # commands the client must obey) or to sample the player's origin at ~ORIGIN_HZ:
            # parsing every reply would cost the clients' CPU more than the server's.
            self.replies += 1
            if not (data[3] & 0x80) and self.replies % self.origin_every:
                return
        events = qw.parse_server_message(payload)
        if events.parse_error:
            self.log.parse_errors += 1
            self.last_parse_error = f"{events.parse_error} in {payload[:48].hex()}"
        self._act(events, now)

    def _connectionless(self, text: bytes, now: float) -> None:
        if text[:1] == b"c" and self.state == "challenge":
            digits = b""
            for ch in text[1:]:
                if 48 <= ch <= 57 or (ch == 45 and not digits):
                    digits += bytes([ch])
                else:
                    break
            userinfo = (
                f"\\name\\{self.name}\\topcolor\\0\\bottomcolor\\0"
                f"\\rate\\{RATE_BYTES_PER_S}\\pmodel\\33168\\emodel\\6967"
            )
            self._send_oob(
                f"connect {qw.PROTOCOL_VERSION} {self.chan.qport} "
                f'{int(digits or b"0")} "{userinfo}"\n'
            )
            self.state = "connecting"
            self.last_oob = now
        elif text[:1] == b"j" and self.state in ("challenge", "connecting"):
            self.state = "signon"
            self.log.connected_at = now
            self._command("new")

    def _command(self, text: str) -> None:
        self.last_command = text
        self.chan.queue_reliable(qw.string_command(text))

    def _act(self, events: qw.ServerEvents, now: float) -> None:
        if events.serverdata is not None:
            self.servercount, self.log.playernum = events.serverdata
            self._command(f"soundlist {self.servercount} 0")
        if events.soundlist_next is not None:
            nxt = events.soundlist_next
            cmd = (
                f"soundlist {self.servercount} {nxt}" if nxt else f"modellist {self.servercount} 0"
            )
            self._command(cmd)
        if events.modellist_next is not None:
            nxt = events.modellist_next
            cmd = (
                f"modellist {self.servercount} {nxt}" if nxt else f"prespawn {self.servercount} 0 0"
            )
            self._command(cmd)
        for text in events.stufftext:
            for line in text.replace(";", "\n").splitlines():
                line = line.strip()
                if line.startswith("cmd "):
                    self._command(line[4:])
                elif line == "skins" and not self.begin_sent:
                    self._command(f"begin {self.servercount}")
                    self.begin_sent = True
                elif line == "reconnect":
                    self._command("new")
        if (
            self.begin_sent
            and self.state == "signon"
            and not self.chan.reliable
            and not self.chan.pending
        ):
            self.state = "active"
            self.log.began_at = now
        if self.state == "active" and self.log.playernum in events.origins:
            self.log.origins.append((now, *events.origins[self.log.playernum]))

    # -- sending -----------------------------------------------------------------------------
    def _send_oob(self, text: str) -> None:
        if self.transport is not None:
            self.transport.send(qw.connectionless(text))

    def tick(self, now: float) -> None:
        """Send this client's packet for one client frame."""
        if self.transport is None:
            return
        if self.state in ("challenge", "connecting"):
            if now - self.last_oob >= SIGNON_RESEND_S:
                self.state = "challenge"
                self._send_oob("getchallenge\n")
                self.last_oob = now
            return
        if self.state == "dropped":
            return
        if self.state == "active":
            cmd = self.bot.next_command(self.msec)
            self.cmds = [self.cmds[1], self.cmds[2], cmd]
            sequence = self.chan.outgoing_sequence
            move = qw.move_message(self.table, sequence, tuple(self.cmds))
            packet, sequence = self.chan.transmit(move)
            self.sent_at[sequence] = now
            if len(self.sent_at) > 256:
                for old in sorted(self.sent_at)[:128]:
                    del self.sent_at[old]
            self.log.move_times.append(now)
        else:
            packet, _ = self.chan.transmit(bytes([qw.CLC_NOP]))
        self.transport.send(packet)

    def drop(self) -> None:
        if self.transport is not None and self.state not in ("challenge", "connecting"):
            for _ in range(3):
                packet, _ = self.chan.transmit(qw.string_command("drop"))
                self.transport.send(packet)
        self.state = "dropped"


@dataclass(frozen=True)
class ClientPlan:
    """The synthetic load: how many clients, their rate and phases, and the seed."""

    clients: int
    rate_hz: float
    phases: PhasePattern
    seed: int = 1


@dataclass
class ClientRun:
    """The clients' logs and the measured window [start, end] in CLOCK_MONOTONIC seconds."""

    logs: list[ClientLog]
    window: tuple[float, float]
    signon_s: float
    cpu_s: float
    wall_s: float
    phases_s: np.ndarray
    send_lateness_s: float = float("nan")
    """mean delay of a send after its due time (the clients' scheduling jitter)"""
    burst_width_s: float = float("nan")
    """mean time from a burst's first send to its last (0 for independent phases)"""
    sends: np.ndarray = field(default_factory=lambda: np.empty((0, 4)))
    """every send of the measured window: client, tick, due and sent times (s)"""
    window_busy_s: float = float("nan")
    """time the loop spent sending and reading replies inside the measured window (s): not
    sleeping, nor polling empty sockets in the last SPIN_S before a send"""
    window_cpu_s: float = float("nan")
    """the clients' CPU time inside the measured window (s)"""


def _drive(
    plan: ClientPlan,
    port: int,
    table: bytes,
    warmup_s: float,
    duration_s: float,
    signon_timeout_s: float,
) -> ClientRun:
    rng = np.random.default_rng(plan.seed)
    period = 1.0 / plan.rate_hz
    msec = max(1, min(255, round(1000.0 / plan.rate_hz)))
    child = rng.spawn(plan.clients + 1)
    phases = plan.phases.phases(plan.clients, period, child[-1])
    clients = [
        _Client(i, table, child[i], msec, f"bot{i:03d}", plan.rate_hz) for i in range(plan.clients)
    ]
    by_socket: dict[socket.socket, _Client] = {}
    cpu0, wall0 = time.process_time(), time.monotonic()
    t0 = time.monotonic() + 0.05
    # Clients join one at a time, SIGNON_SPACING_S apart: 32 players spawning in the same
    # frame on a small map telefrag each other in bursts that overflow one of mvdsv 0.35's
    # message buffers (Sys_Error "SZ_GetSpace: overflow without allowoverflow set").
    first = np.ceil(np.arange(plan.clients) * SIGNON_SPACING_S * plan.rate_hz)
    heap = [(t0 + phases[i] + first[i] * period, i, int(first[i])) for i in range(plan.clients)]
    heapq.heapify(heap)
    signon_deadline = t0 + signon_timeout_s
    window: tuple[float, float] | None = None
    end = math.inf
    signed_on_at = None
    sends: list[tuple[int, int, float, float]] = []  # client, tick, due, sent (measured window)
    busy = 0.0
    window_cpu0 = window_cpu = math.nan
    try:
        for c in clients:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.setblocking(False)
            sock.connect(("127.0.0.1", port))
            c.transport = sock
            by_socket[sock] = c
        sockets = list(by_socket)
        while heap:
            # 1. every send that is due, first: the clients' send times are the experiment
            now = phase_start = time.monotonic()
            in_window = window is not None and window[0] <= now <= end
            if window is not None and math.isnan(window_cpu0) and now >= window[0]:
                window_cpu0 = time.process_time()
            if not math.isnan(window_cpu0) and math.isnan(window_cpu) and now > end:
                window_cpu = time.process_time() - window_cpu0
            while heap[0][0] <= now:
                due, i, k = heap[0]
                heapq.heapreplace(heap, (t0 + phases[i] + (k + 1) * period, i, k + 1))
                clients[i].tick(now)
                if window is not None and window[0] <= now <= end:
                    sends.append((i, k, due, time.monotonic()))
                now = time.monotonic()
            if in_window:
                busy += now - phase_start
            if window is None:
                if all(c.state == "active" for c in clients):
                    signed_on_at = now
                    start = now + warmup_s
                    end = start + duration_s
                    window = (start, end)
                elif now > signon_deadline:
                    stuck = [c for c in clients if c.state != "active"]
                    detail = "; ".join(
                        f"client {c.log.index}: {c.state}, last command "
                        f"{c.last_command!r}, {c.log.parse_errors} unparsed "
                        f"replies {c.last_parse_error}"
                        for c in stuck[:2]
                    )
                    raise RuntimeError(
                        f"{len(stuck)} of {plan.clients} clients did not sign "
                        f"on within {signon_timeout_s} s ({detail})"
                    )
            elif now >= end + 0.05:
                break
            # 2. replies until the next send is due: select() sleeps with microsecond
            # resolution up to SPIN_S before it, then the sockets are polled without blocking;
            # a reply is never read once a send is due.
            wait = heap[0][0] - time.monotonic()
            ready, _, _ = select.select(sockets, [], [], max(0.0, wait - SPIN_S))
            phase_start = time.monotonic()
            for sock in ready:
                client = by_socket[sock]
                while heap[0][0] > time.monotonic():
                    try:
                        data = sock.recv(65536)
                    except (BlockingIOError, ConnectionRefusedError):
                        break
                    client.datagram_received(data)
            if in_window and ready:
                busy += time.monotonic() - phase_start
    finally:
        for c in clients:
            c.drop()
        for c in clients:
            if c.transport is not None:
                c.transport.close()
    return ClientRun(
        [c.log for c in clients],
        window,
        signed_on_at - t0,
        time.process_time() - cpu0,
        time.monotonic() - wall0,
        phases,
        *_send_timing(sends, plan),
        sends=np.asarray(sends).reshape(-1, 4),
        window_busy_s=busy,
        window_cpu_s=window_cpu,
    )


def _send_timing(
    sends: list[tuple[int, int, float, float]], plan: ClientPlan
) -> tuple[float, float]:
    """(mean lateness of a send after its due time, mean width of a host's burst) in s.

    A host's burst is the sends due at one instant (all clients for ``step``, one host's for
    ``hosts:H``); its width is its last send minus its first.  ``independent`` has no bursts.
    """
    if not sends:
        return float("nan"), float("nan")
    arr = np.asarray(sends)
    lateness = float(np.mean(arr[:, 3] - arr[:, 2]))
    if plan.phases.kind == "independent":
        return lateness, 0.0
    hosts = 1 if plan.phases.kind == "step" else plan.phases.hosts
    host = arr[:, 0].astype(int) % hosts
    frame = pd.DataFrame({"host": host, "tick": arr[:, 1], "sent": arr[:, 3]})
    spans = frame.groupby(["host", "tick"])["sent"].agg(["min", "max", "count"])
    spans = spans[spans["count"] > 1]
    return lateness, float((spans["max"] - spans["min"]).mean()) if len(spans) else 0.0


def run_clients(
    plan: ClientPlan,
    port: int,
    table: bytes,
    *,
    warmup_s: float,
    duration_s: float,
    signon_timeout_s: float = 20.0,
) -> ClientRun:
    """Sign the clients on, play ``warmup_s`` then the measured ``duration_s``, drop them."""
    return _drive(plan, port, table, warmup_s, duration_s, signon_timeout_s)
