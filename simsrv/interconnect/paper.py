"""What [V §4.1] states about its ping-pong curves, as numbers (the figures are images).

Only the text's numbers are here: the paper's Figures 5 and 6 are not in the text, so no
point is read off a curve.  Bandwidths in MB/s (10^6 bytes/s), sizes in bytes ("10 KBytes"
is 10,000 B: the paper writes its sizes in decimal, "10 a 100.000 Bytes").
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PaperPoint:
    """A bandwidth the text gives for one profile at one size."""

    profile: str
    message_bytes: int
    bandwidth_MB_per_s: float  # noqa: N815
    source: str
    quote: str


PAPER_POINTS = (
    PaperPoint("libvip", 10000, 33.0, "V §4.1, Figure 6", "atingem aproximadamente 33 MBytes/s"),
    PaperPoint("libvip-altered", 10000, 33.0, "V §4.1, Figure 6", "aproximadamente 33 MBytes/s"),
    PaperPoint("tcp", 10000, 24.6, "V §4.1, Figure 6", "24.6 MBytes/s ... 10 KBytes"),
    PaperPoint("libvip", 40000, 41.1, "V §4.1, Figure 5", "41,1 MBytes/s ... 20 e 40 KBytes"),
    PaperPoint("libvip-altered", 40000, 38.75, "V §4.1, Figure 5", "38,75 MBytes/s"),
    PaperPoint("tcp", 40000, 35.0, "V §4.1, Figure 5", "40 KBytes ... 35 MBytes/s"),
    PaperPoint("libvip", 100000, 33.5, "V §4.1, Figure 5", "acima de 40 KBytes ... 33.5"),
    PaperPoint("libvip-altered", 100000, 33.5, "V §4.1, Figure 5", "acima de 40 KBytes ... 33.5"),
    PaperPoint("tcp", 100000, 33.5, "V §4.1, Figure 5", "acima de 40 KBytes ... 33.5"),
)
"""Every bandwidth the text states.  The peaks (41.1, 38.75) are placed at 40 KB, the end of
the 20-40 KB range where [V] says they occur (TCP's is at 40 KB); "about 33.5 MB/s" above
40 KB at 100 KB, the largest size measured.  Not numbers, and not here: TCP beats libVIP
normal up to 2,400 B and drops after it; the altered mode beats the normal one up to 10 KB
(rows of the reference table state them)."""
