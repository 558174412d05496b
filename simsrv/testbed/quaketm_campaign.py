"""The QuakeTM campaign: its builds x threads x clients, maps, phases, periods, wait policies.

``simsrv testbed --campaign quaketm --out DIR`` measures :func:`quaketm_campaign`: three
passes (seeds 1, 2, 3; each pass one repeat of every condition, so a condition's spread is
over passes minutes apart) of :func:`quaketm_pass`:

* ``threads``: dm1, independent phases, 77 Hz, the stock 100 ms frame; the serial build
  (``calibration``: the model's platform is fitted on these runs only) and the global,
  coarse and fine builds on 1, 2 and 4 threads (4: oversubscribed on two CPUs), 8 to 32
  clients;
* ``maps``: dm3 (the serial build, fine on 1 and 2 threads, global on 2; 16 and 32 clients);
* ``phases``: every client sending in step (bursts), the same builds;
* ``period``: a 20 ms frame, the same builds;
* ``spin``: idle OpenMP threads spinning (``OMP_WAIT_POLICY=active``, the behaviour of the
  Intel runtime QuakeTM was measured with): fine on 1, 2 and 4 threads, global on 2;
* ``pinning``: the serial build alone on CPU 1 (the clients on CPU 0: what sharing the CPUs
  with the clients costs) and fine on 2 threads each bound to one CPU.

Every server's threads may use both CPUs (``server_cpu`` None) unless the condition pins
them; the clients run on CPU 0.
"""

from __future__ import annotations

from dataclasses import replace

from simsrv.testbed.campaign import Campaign, Condition
from simsrv.testbed.run import TestbedConfig

QUAKETM = "quaketm"
SEEDS = (1, 2, 3)
CLIENTS = (8, 16, 24, 32)
SERVERS_THREADS = (
    ("quaketm-serial", 1),
    *((f"quaketm-{v}", t) for v in ("global", "coarse", "fine") for t in (1, 2, 4)),
)
"""The ``threads`` grid's builds and thread counts."""
SIDE_SERVERS = (
    ("quaketm-serial", 1),
    ("quaketm-fine", 1),
    ("quaketm-fine", 2),
    ("quaketm-global", 2),
)
"""The builds of the maps, phases and period questions."""
SIDE_CLIENTS = (16, 32)


def quaketm_pass(duration_s: float = 6.0, seed: int = 1) -> list[Condition]:
    """One pass of the campaign (76 conditions)."""
    base = TestbedConfig(
        duration_s=duration_s, warmup_s=1.0, seed=seed, map="dm1", rate_hz=77.0,
        phases="independent", server_cpu=None, port=27620,
    )  # fmt: skip
    out: list[Condition] = []
    for server, threads in SERVERS_THREADS:
        role = "calibration" if server == "quaketm-serial" else "prediction"
        for n in CLIENTS:
            config = replace(base, server=server, threads=threads, clients=n)
            out.append(Condition(config, role, "threads"))
    for question, change in (
        ("maps", {"map": "dm3"}),
        ("phases", {"phases": "step"}),
        ("period", {"frame_s": 0.02}),
    ):
        for server, threads in SIDE_SERVERS:
            for n in SIDE_CLIENTS:
                config = replace(base, server=server, threads=threads, clients=n, **change)
                out.append(Condition(config, "prediction", question))
    for server, threads in (("quaketm-fine", 1), ("quaketm-fine", 2), ("quaketm-fine", 4),
                            ("quaketm-global", 2)):  # fmt: skip
        for n in SIDE_CLIENTS:
            config = replace(base, server=server, threads=threads, clients=n, omp_wait="active")
            out.append(Condition(config, "prediction", "spin"))
    for n in SIDE_CLIENTS:
        alone = replace(base, server="quaketm-serial", clients=n, server_cpu=1)
        bound = replace(base, server="quaketm-fine", threads=2, clients=n, bind=True)
        out += [
            Condition(alone, "prediction", "pinning"),
            Condition(bound, "prediction", "pinning"),
        ]
    return out


def quaketm_campaign(duration_s: float = 6.0, seeds: tuple[int, ...] = SEEDS) -> Campaign:
    """The campaign of docs/quaketm.md: one :func:`quaketm_pass` per seed."""
    return Campaign(tuple(c for seed in seeds for c in quaketm_pass(duration_s, seed)))
