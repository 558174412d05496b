"""Server strategies.  Importing this package registers every built-in strategy."""

from simsrv.strategies import sequential  # noqa: F401  (registers "sequential")
from simsrv.strategies.base import STRATEGIES, Strategy, StrategyContext, StrategyKind

__all__ = ["STRATEGIES", "Strategy", "StrategyContext", "StrategyKind"]
