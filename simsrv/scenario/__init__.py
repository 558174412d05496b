"""Scenarios: validated, typed descriptions of a run, loaded from TOML files."""

from simsrv.scenario.schema import Scenario

__all__ = ["Scenario", "load_scenario"]


def load_scenario(source=None, overrides=()):
    """Build a validated :class:`Scenario`; see :func:`simsrv.scenario.load.load_scenario`."""
    from simsrv.scenario.load import load_scenario as _load

    return _load(source, overrides)
