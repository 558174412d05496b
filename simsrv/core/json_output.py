"""JSON that every parser reads: every command's ``--json`` output without NaN or infinities.

Python's :mod:`json` writes a float NaN as ``NaN`` (not JSON: strict parsers, ``jq`` and most
languages refuse it).  A metric without a value (a response time when no packet was answered,
a quantity a failed run could not measure) is written as ``null`` instead.
"""

from __future__ import annotations

import json
import math
from typing import IO, Any


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float (in dicts, lists and tuples) replaced by None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def dump(value: Any, stream: IO[str], **options: Any) -> None:
    """:func:`json.dump` of :func:`json_safe` ``(value)``, refusing any NaN left."""
    json.dump(json_safe(value), stream, allow_nan=False, **options)
