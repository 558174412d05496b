"""Loading scenarios from TOML, with dotted ``--set`` overrides, into a :class:`Scenario`.

Every error is an :class:`~simsrv.core.errors.InputError` with one line naming the field.

The composition root: resolving a scenario's names is the one place that imports every
registry (strategies, map kinds, mobility models, engines, platforms, zonings,
interconnect profiles), above all of them.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from simsrv.core.errors import InputError, shown
from simsrv.core.strict_model import validate
from simsrv.core.toml_file import read_toml
from simsrv.machine.engines import ENGINES
from simsrv.platforms.profile import load_platform
from simsrv.scenario.bounds import check_client_hosts, check_run_measures_packets
from simsrv.scenario.schema import (
    ClientsSection,
    ClusterSection,
    MachineSection,
    MapSection,
    PlayersSection,
    RunSection,
    Scenario,
    ServerSection,
)
from simsrv.strategies import STRATEGIES
from simsrv.workload.send_times import load_send_times
from simsrv.world.maps import MAP_KINDS
from simsrv.world.mobility import MOBILITY_MODELS

SECTIONS = ("run", "map", "players", "clients", "server", "machine", "cluster")


def load_scenario(
    source: str | Path | dict[str, Any] | None = None, overrides: Iterable[str] = ()
) -> Scenario:
    """Build a validated scenario.

    Parameters
    ----------
    source:
        A TOML path, an already-decoded dict, or ``None`` for defaults only.
    overrides:
        ``"dotted.name=value"`` strings; values are parsed as TOML values (``4``, ``0.5``,
        ``true``, ``"text"``) and fall back to plain strings (``map.kind=cube``).
    """
    return build_scenario(load_raw(source, overrides))


def load_raw(
    source: str | Path | dict[str, Any] | None = None, overrides: Iterable[str] = ()
) -> dict[str, Any]:
    """The decoded scenario dict with the overrides applied, not yet validated (arguments as
    in :func:`load_scenario`; ``source`` is not modified)."""
    if isinstance(overrides, str | bytes) or not isinstance(overrides, Iterable):
        raise InputError(
            f"overrides: must be a list of 'dotted.name=value' strings, e.g. "
            f"['run.seed=3'], got {shown(overrides)}"
        )
    overrides = list(overrides)
    for item in overrides:
        if not isinstance(item, str):
            raise InputError(
                f"overrides: each must be a 'dotted.name=value' string, got {shown(item)}"
            )
    if source is None:
        raw: dict[str, Any] = {}
    elif isinstance(source, dict):
        try:
            raw = copy.deepcopy(source)
        except RecursionError:
            raise InputError("source: tables or arrays nested too deep") from None
    elif isinstance(source, str | Path):
        raw = read_toml(source)
    else:
        raise InputError(
            f"source: must be a TOML path, a dict or None, got {type(source).__name__}"
        )
    for item in overrides:
        apply_override(raw, item)
    return raw


def apply_override(raw: dict[str, Any], item: str) -> None:
    """Set ``a.b.c=value`` into the nested dict ``raw``."""
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise InputError(f"--set {item!r}: expected dotted.name=value, e.g. machine.cpus=4")
    parts = key.split(".")
    if parts[0] not in SECTIONS:
        raise InputError(f"{key}: unknown section {parts[0]!r}; allowed: {', '.join(SECTIONS)}")
    node = raw
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise InputError(f"{key}: {part!r} is a value, not a table")
        node = child
    node[parts[-1]] = parse_value(text.strip())


def parse_value(text: str) -> Any:
    """A TOML value (number, boolean, string, array) or, failing that, the text itself."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    except RecursionError:
        raise InputError(f"--set value {shown(text)}: arrays nested too deep") from None
    except ValueError:  # an integer of more digits than Python converts (4,300)
        raise InputError(f"--set value {shown(text)}: a number too long to read") from None


def build_scenario(raw: dict[str, Any]) -> Scenario:
    """Validate a decoded scenario dict section by section, resolving registered names."""
    unknown = sorted(set(raw) - set(SECTIONS))
    if unknown:
        raise InputError(f"{unknown[0]}: unknown section; allowed: {', '.join(SECTIONS)}")
    sections = {name: _table(raw, name) for name in SECTIONS}

    map_raw = sections["map"]
    kind_name = map_raw.pop("kind", MapSection.model_fields["kind"].default)
    kind = MAP_KINDS.get(kind_name, "map.kind")
    map_section = MapSection(kind=kind_name, params=validate(kind.params, map_raw, "map"))

    players_raw = sections["players"]
    behaviour = players_raw.pop("behaviour", {})
    players = validate(PlayersSection, players_raw, "players")
    mobility = MOBILITY_MODELS.get(players.mobility, "players.mobility")
    players = players.model_copy(
        update={"behaviour": validate(mobility.params, behaviour, "players.behaviour")}
    )

    server_raw = sections["server"]
    options = server_raw.pop("options", {})
    server = validate(ServerSection, server_raw, "server")
    strategy = STRATEGIES.get(server.strategy, "server.strategy")
    server = server.model_copy(
        update={"options": validate(strategy.options, options, "server.options")}
    )

    machine = validate(MachineSection, sections["machine"], "machine")
    ENGINES.get(machine.engine, "machine.engine")
    platform = load_platform(machine.platform)
    if machine.cpu_quota_us is not None and platform.irq_cpu is not None:
        raise InputError(
            f"machine.cpu_quota_us: a CPU quota cannot be combined with the platform's "
            f"interrupt CPU (platform {machine.platform!r} has irq_cpu = {platform.irq_cpu})"
        )
    run = validate(RunSection, sections["run"], "run")
    clients = validate(ClientsSection, sections["clients"], "clients")
    check_run_measures_packets(run, players, clients)
    check_client_hosts(players, clients)
    if clients.send_times_file:  # readable, and exactly the players at the rate
        load_send_times(clients.send_times_file, players.count, clients.rate_hz)
    cluster = build_cluster(raw, players) if "cluster" in raw else None
    return Scenario(
        run=run,
        map=map_section,
        players=players,
        clients=clients,
        server=server,
        machine=machine,
        cluster=cluster,
    )


def build_cluster(raw: dict[str, Any], players: PlayersSection) -> ClusterSection:
    """The ``[cluster]`` section, its names resolved and ``border_width`` defaulted to
    ``players.action_range``."""
    from simsrv.interconnect import load_profile
    from simsrv.pipeline.cluster.zoning import ZONINGS

    cluster = validate(ClusterSection, _table(raw, "cluster"), "cluster")
    ZONINGS.get(cluster.zoning, "cluster.zoning")
    try:
        load_profile(cluster.interconnect)
    except InputError as error:
        detail = str(error).removeprefix("profile: ")
        raise InputError(f"cluster.interconnect: {detail}") from None
    if cluster.border_width is None:
        cluster = cluster.model_copy(update={"border_width": players.action_range})
    return cluster


def _table(raw: dict[str, Any], name: str) -> dict[str, Any]:
    value = raw.get(name, {})
    if not isinstance(value, dict):
        raise InputError(f"{name}: must be a table ([{name}]), got {shown(value)}")
    return dict(value)
