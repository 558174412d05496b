"""Server strategies.  Importing this package registers every built-in strategy."""

from simsrv.strategies import (  # noqa: F401 (registering)
    abdelkhalek,
    area_quadrant,
    bsp_group,
    sequential,
)
from simsrv.strategies.base import STRATEGIES, Strategy, StrategyContext, StrategyKind

__all__ = ["STRATEGIES", "Strategy", "StrategyContext", "StrategyKind"]
