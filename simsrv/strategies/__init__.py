"""Server strategies.  Importing this package registers every built-in strategy."""

from simsrv.strategies import abdelkhalek, bsp_group, sequential  # noqa: F401 (registering)
from simsrv.strategies.base import STRATEGIES, Strategy, StrategyContext, StrategyKind

__all__ = ["STRATEGIES", "Strategy", "StrategyContext", "StrategyKind"]
