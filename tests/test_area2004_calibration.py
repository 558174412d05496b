"""The UltraSPARC platform's sequential capacity follows the report's protocol [R §5].

The fitted facts themselves (stage 2 per packet, the stage-1 share, the capacity, the stage-3
share) are rows of the reference table, checked by ``tests/test_validation.py``; this checks
the path of the capacity search: 8, 16 and 24 clients met, 32 overloaded.
"""

from __future__ import annotations

from simsrv.sweep.capacity import find_capacity

SEQUENTIAL = "scenarios/area2004/sequential.toml"


def test_sequential_capacity_is_24_clients_with_the_report_rule():
    found = find_capacity(SEQUENTIAL, ["run.duration_s=3"], min_reply_ratio=0.95)
    assert found.capacity_clients == 24
    assert [p["clients"] for p in found.points] == [8, 16, 24, 32]
