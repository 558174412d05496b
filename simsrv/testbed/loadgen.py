"""The compiled load generator: the synthetic clients of :mod:`simsrv.testbed.clients` in C.

One Python loop cannot send 256 clients' moves at 77 Hz (~20,000 packets/s) and read the
replies on one CPU: at 32 clients it already takes ~70 % of a core.  ``loadgen/loadgen.c``
(our own code, MIT like the rest of simsrv) runs the same loop, protocol and bot as the
Python clients, whose code is its specification:

- the same sign-on (challenge, connect with protocol 28, qport and rate 100000, the string
  commands the server asks for), netchan (reliable bits, acknowledgements, resends), moves
  (``clc_move`` with three delta-coded user commands and the sequence checksum) and ``drop``;
- the same send schedule (the phases are drawn here, with the Python clients' generator, and
  handed over), the same join spacing, and the same timing strategy: every due move is sent
  before any reply is read; it sleeps in ``ppoll()`` (nanosecond timeout) on an epoll set
  until :data:`~simsrv.testbed.clients.SPIN_S` before the next send, then polls;
- the same bot (20-frame cycle, one random action after 5 walking frames), drawn from each
  client's own seeded generator (xoshiro256** seeded from the run's seed and the client's
  number: the same distribution as the Python clients, not the same draws);
- the same records: move and reply times, round trips, origins sampled at ~10 Hz from the
  replies' ``svc_playerinfo``, unparsed replies, and every send of the measured window.

The move checksum's table is GPL code in the server's ``src/common.c``: it is read from the
shared source at run time (:func:`simsrv.testbed.protocol.load_checksum_table`) and written
to a file the generator reads; it is never part of this repository.  The program is built
with the C compiler once per digest of its source into the testbed's cache.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from simsrv.core.errors import InputError
from simsrv.testbed.build import cache_root
from simsrv.testbed.clients import (
    ORIGIN_HZ,
    RATE_BYTES_PER_S,
    SCHEDULE,
    SIGNON_RESEND_S,
    SIGNON_SPACING_S,
    SPIN_S,
    ClientLog,
    ClientPlan,
    ClientRun,
    _send_timing,
)
from simsrv.testbed.processes import stop_group, tie_and_pin
from simsrv.world.mobility.quake_bot import ACTION_JUMP, ACTION_SHOT

SOURCE = Path(__file__).with_name("loadgen") / "loadgen.c"

_CLIENT = np.dtype(
    [
        ("connected_at", "<f8"),
        ("began_at", "<f8"),
        ("index", "<i4"),
        ("playernum", "<i4"),
        ("parse_errors", "<i4"),
        ("state", "<i4"),
    ]
)
_MOVE = np.dtype([("t", "<f8"), ("client", "<i4"), ("pad", "<i4")])
_REPLY = np.dtype([("t", "<f8"), ("rtt", "<f8"), ("client", "<i4"), ("pad", "<i4")])
_ORIGIN = np.dtype(
    [("t", "<f8"), ("x", "<f8"), ("y", "<f8"), ("z", "<f8"), ("client", "<i4"), ("pad", "<i4")]
)
_SEND = np.dtype([("client", "<i4"), ("tick", "<i4"), ("due", "<f8"), ("sent", "<f8")])


def compiler() -> str | None:
    """The C compiler on PATH (``cc``, else ``gcc``), or None."""
    return shutil.which("cc") or shutil.which("gcc")


def build_loadgen() -> Path:
    """Compile ``loadgen.c`` once per digest of its source; return the binary's path."""
    if compiler() is None:
        raise InputError(
            "testbed --clients-impl c: the load generator needs a C compiler (cc or gcc) on "
            "PATH (Debian: apt-get install build-essential), or use --clients-impl python"
        )
    return compile_once("loadgen", SOURCE, ["-O2", "-std=gnu11", "-Wall"], ["-lm"])


def compile_once(name: str, source: Path, flags: list[str], libraries: list[str]) -> Path:
    """Compile the C file ``source`` once per digest of its text and flags (kept in the cache
    as ``NAME-DIGEST/NAME``; concurrent builds wait on a file lock); the binary's path."""
    cc = compiler()
    if cc is None:
        raise InputError(f"testbed: {name} needs a C compiler (cc or gcc) on PATH")
    h = hashlib.sha256(source.read_bytes())
    h.update(" ".join(flags + libraries).encode())
    digest = h.hexdigest()[:16]
    home = cache_root() / f"{name}-{digest}"
    binary = home / name
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(home.parent / f"{name}-{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.is_file():
            return binary
        home.mkdir(parents=True, exist_ok=True)
        staging = home / f"{name}.staging"
        out = subprocess.run(
            [cc, *flags, "-o", str(staging), str(source), *libraries],
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            raise RuntimeError(f"compiling {name} failed: {out.stderr.strip().splitlines()[-1:]}")
        staging.rename(binary)
    return binary


def write_table(table: bytes, path: Path) -> Path:
    """The checksum table (read from the server's source at run time) for the generator."""
    if len(table) != 1024:
        raise ValueError(f"the checksum table has {len(table)} bytes, not 1024")
    path.write_bytes(table)
    return path


def plan_text(
    plan: ClientPlan, port: int, warmup_s: float, duration_s: float, signon_timeout_s: float
) -> tuple[str, np.ndarray]:
    """The generator's plan file and the clients' phases (drawn as the Python clients do)."""
    rng = np.random.default_rng(plan.seed)
    period = 1.0 / plan.rate_hz
    child = rng.spawn(plan.clients + 1)
    phases = plan.phases.phases(plan.clients, period, child[-1])
    first = np.ceil(np.arange(plan.clients) * SIGNON_SPACING_S * plan.rate_hz).astype(np.int64)
    msec = max(1, min(255, round(1000.0 / plan.rate_hz)))
    action_at = SCHEDULE.idle_ticks + SCHEDULE.walk_before_action
    values = {
        "port": port,
        "clients": plan.clients,
        "rate_hz": repr(float(plan.rate_hz)),
        "msec": msec,
        "rate_bytes": RATE_BYTES_PER_S,
        "warmup_s": repr(float(warmup_s)),
        "duration_s": repr(float(duration_s)),
        "signon_timeout_s": repr(float(signon_timeout_s)),
        "origin_every": max(1, round(plan.rate_hz / ORIGIN_HZ)),
        "seed": int(plan.seed) & (2**64 - 1),
        "idle": SCHEDULE.idle_ticks,
        "action_at": action_at,
        "cycle": action_at + SCHEDULE.walk_after_action,
        "action_jump": ACTION_JUMP,
        "action_shot": ACTION_SHOT,
        "spin_s": repr(SPIN_S),
        "resend_s": repr(SIGNON_RESEND_S),
    }
    lines = [f"{k} {v}" for k, v in values.items()]
    lines += [f"client {i} {float(phases[i])!r} {int(first[i])}" for i in range(plan.clients)]
    return "\n".join(lines) + "\n", phases


def run_loadgen(
    plan: ClientPlan,
    port: int,
    table: bytes,
    *,
    warmup_s: float,
    duration_s: float,
    signon_timeout_s: float,
    cpu: int | None = None,
    workdir: Path | None = None,
) -> ClientRun:
    """Run the compiled clients (pinned to ``cpu``) and read their logs into a ClientRun."""
    binary = build_loadgen()
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="simsrv-lg-")))
        out = workdir / "loadgen"
        out.mkdir(parents=True, exist_ok=True)
        text, phases = plan_text(plan, port, warmup_s, duration_s, signon_timeout_s)
        (out / "plan.txt").write_text(text)
        write_table(table, out / "chktbl.bin")
        with open(out / "stderr.txt", "wb") as err:
            process = subprocess.Popen(
                [
                    str(binary),
                    "--plan",
                    str(out / "plan.txt"),
                    "--table",
                    str(out / "chktbl.bin"),
                    "--out",
                    str(out),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                preexec_fn=lambda: tie_and_pin(cpu),
            )
            try:
                code = process.wait()
            finally:
                stop_group(process)
        message = (out / "stderr.txt").read_text(errors="replace").strip().splitlines()
        if code == 3:
            raise RuntimeError(message[-1] if message else "the clients did not sign on")
        if code != 0:
            last = message[-1] if message else ""
            raise RuntimeError(f"the load generator failed (code {code}): {last}")
        return read_outputs(out, plan, phases)


def read_outputs(out: Path, plan: ClientPlan, phases: np.ndarray) -> ClientRun:
    """The generator's files as the :class:`ClientRun` the Python clients return."""
    meta = dict(line.split() for line in (out / "meta.txt").read_text().splitlines() if line)
    meta_f = {k: float(v) for k, v in meta.items()}
    recs = np.fromfile(out / "clients.bin", dtype=_CLIENT)
    moves = np.fromfile(out / "moves.bin", dtype=_MOVE)
    replies = np.fromfile(out / "replies.bin", dtype=_REPLY)
    origins = np.fromfile(out / "origins.bin", dtype=_ORIGIN)
    sends = np.fromfile(out / "sends.bin", dtype=_SEND)

    def by_client(array: np.ndarray) -> list[np.ndarray]:
        order = np.argsort(array["client"], kind="stable")
        cut = np.searchsorted(array["client"][order], np.arange(plan.clients + 1))
        return [array[order[cut[i] : cut[i + 1]]] for i in range(plan.clients)]

    moves_by, replies_by, origins_by = by_client(moves), by_client(replies), by_client(origins)
    logs = []
    for i, rec in enumerate(recs):
        log = ClientLog(int(rec["index"]))
        log.move_times = moves_by[i]["t"]
        log.reply_times = replies_by[i]["t"]
        log.round_trips = replies_by[i]["rtt"]
        o = origins_by[i]
        log.origins = np.column_stack([o["t"], o["x"], o["y"], o["z"]])
        log.began_at = None if np.isnan(rec["began_at"]) else float(rec["began_at"])
        log.connected_at = None if np.isnan(rec["connected_at"]) else float(rec["connected_at"])
        log.parse_errors = int(rec["parse_errors"])
        log.playernum = None if rec["playernum"] < 0 else int(rec["playernum"])
        logs.append(log)
    send_rows = np.column_stack(
        [sends["client"], sends["tick"], sends["due"], sends["sent"]]
    ).astype(float)
    return ClientRun(
        logs,
        (meta_f["window_start"], meta_f["window_end"]),
        meta_f["signed_on_at"] - meta_f["t0"],
        meta_f["cpu_s"],
        meta_f["wall_s"],
        phases,
        *_send_timing([tuple(r) for r in send_rows], plan),
        sends=send_rows.reshape(-1, 4),
        window_busy_s=meta_f["window_busy_s"],
        window_cpu_s=meta_f["window_cpu_s"],
    )


def encode_moves(binary: Path, table: bytes, rows: list[tuple[int, tuple]]) -> list[bytes]:
    """The generator's ``--selftest``: the clc_move bytes it writes for each (sequence, three
    user commands); for comparison with :func:`simsrv.testbed.protocol.move_message`."""
    with tempfile.TemporaryDirectory(prefix="simsrv-lg-") as tmp:
        path = write_table(table, Path(tmp) / "chktbl.bin")
        lines = []
        for sequence, cmds in rows:
            fields = [str(sequence)]
            for cmd in cmds:
                fields += [
                    str(cmd.msec),
                    *(repr(float(a)) for a in cmd.angles),
                    str(cmd.forward),
                    str(cmd.side),
                    str(cmd.up),
                    str(cmd.buttons),
                    str(cmd.impulse),
                ]
            lines.append(" ".join(fields))
        out = subprocess.run(
            [str(binary), "--selftest", "--table", str(path)],
            input="\n".join(lines) + "\n",
            capture_output=True,
            text=True,
            check=True,
        )
    return [bytes.fromhex(line) for line in out.stdout.split()]


__all__ = ["build_loadgen", "compiler", "encode_moves", "run_loadgen"]
