"""Bounds between fields that follow from the model (checked after each section is valid).

A run must measure something: the server runs a frame when client packets arrive, and the
``players.count`` clients send ``clients.rate_hz`` packets per second each (phases spread over
a period), so ``players.count * rate_hz * run.duration_s`` packets are expected in the
measured window.  Below one packet the run would have no frame and every metric would be 0,
so the scenario is refused, naming the field that is off: the rate when it is too low even
for the default 10 s run, otherwise the duration.
"""

from __future__ import annotations

from simsrv.core.errors import InputError
from simsrv.scenario.schema import ClientsSection, PlayersSection, RunSection

DEFAULT_DURATION_S = RunSection.model_fields["duration_s"].default


def check_run_measures_packets(
    run: RunSection, players: PlayersSection, clients: ClientsSection
) -> None:
    """Raise :class:`InputError` unless at least one client packet is expected in the
    measured window: ``players.count * clients.rate_hz * run.duration_s >= 1``."""
    total_hz = players.count * clients.rate_hz  # packets per second from all clients
    if total_hz * run.duration_s >= 1.0:
        return
    if total_hz * max(DEFAULT_DURATION_S, run.duration_s) < 1.0:
        raise InputError(
            f"clients.rate_hz: {clients.rate_hz:g} Hz is too low for {players.count} players "
            f"to send one packet in the run (run.duration_s = {run.duration_s:g} s); must be "
            f">= {1.0 / (players.count * run.duration_s):g} Hz"
        )
    raise InputError(
        f"run.duration_s: {run.duration_s:g} s is too short for one client packet "
        f"({players.count} players x clients.rate_hz = {clients.rate_hz:g} Hz), so the run "
        f"would measure nothing; must be >= {1.0 / total_hz:g} s"
    )


def check_client_hosts(players: PlayersSection, clients: ClientsSection) -> None:
    """Raise :class:`InputError` unless every client machine runs at least one client:
    ``clients.hosts <= players.count``."""
    if clients.hosts > players.count:
        raise InputError(
            f"clients.hosts: must be at most players.count = {players.count} (each host runs "
            f"at least one client), got {clients.hosts}"
        )
