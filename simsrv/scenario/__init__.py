"""Scenarios: validated, typed descriptions of a run.

Loading one from TOML resolves registered names (strategies, maps, ...), so it is
:func:`simsrv.pipeline.load.load_scenario`, above the parts it names.
"""

from simsrv.scenario.schema import Scenario

__all__ = ["Scenario"]
