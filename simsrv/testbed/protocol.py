"""The QuakeWorld protocol (version 28) as far as a synthetic client needs it.

What is implemented, from the protocol as the server in ``../shared/qw-testbed/`` speaks it
(mvdsv 0.35 with no protocol extension negotiated):

- connectionless packets (``0xffffffff`` + text): ``getchallenge`` / ``connect``;
- the netchan header (sequence and acknowledgement words with a reliable bit each, the
  client's qport) and its one-message reliable window (:class:`Netchan`);
- the client's messages: ``clc_stringcmd``, ``clc_move`` with three delta-coded user
  commands and the sequence checksum, ``clc_nop``;
- a parser of every server message a vanilla client can receive (:func:`parse_server_message`),
  so that the sign-on commands the server stuffs and each player's origin can be read.

The move checksum uses a 1,024-byte table that lives in the server's GPL source
(``src/common.c``, ``chktbl``).  It is read from that source at run time
(:func:`load_checksum_table`) and never copied into this project.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

PROTOCOL_VERSION = 28
CONNECTIONLESS = b"\xff\xff\xff\xff"
MAX_CLIENTS = 256  # the largest build of our patch (src/protocol.h; 32 in mvdsv): players 0..255

# client -> server
CLC_NOP, CLC_MOVE, CLC_STRINGCMD = 1, 3, 4
# user command delta bits (src/protocol.h)
CM_ANGLE1, CM_ANGLE3, CM_FORWARD, CM_SIDE, CM_UP = 1, 2, 4, 8, 16
CM_BUTTONS, CM_IMPULSE, CM_ANGLE2 = 32, 64, 128
BUTTON_ATTACK, BUTTON_JUMP = 1, 2

# server -> client (src/protocol.h)
SVC = {
    "bad": 0,
    "nop": 1,
    "disconnect": 2,
    "updatestat": 3,
    "sound": 6,
    "print": 8,
    "stufftext": 9,
    "setangle": 10,
    "serverdata": 11,
    "lightstyle": 12,
    "updatefrags": 14,
    "stopsound": 16,
    "particle": 18,
    "damage": 19,
    "spawnstatic": 20,
    "spawnbaseline": 22,
    "temp_entity": 23,
    "setpause": 24,
    "centerprint": 26,
    "killedmonster": 27,
    "foundsecret": 28,
    "spawnstaticsound": 29,
    "intermission": 30,
    "finale": 31,
    "cdtrack": 32,
    "sellscreen": 33,
    "smallkick": 34,
    "bigkick": 35,
    "updateping": 36,
    "updateentertime": 37,
    "updatestatlong": 38,
    "muzzleflash": 39,
    "updateuserinfo": 40,
    "download": 41,
    "playerinfo": 42,
    "nails": 43,
    "chokecount": 44,
    "modellist": 45,
    "soundlist": 46,
    "packetentities": 47,
    "deltapacketentities": 48,
    "maxspeed": 49,
    "entgravity": 50,
    "setinfo": 51,
    "serverinfo": 52,
    "updatepl": 53,
    "nails2": 54,
}
_SVC_NAME = {code: name for name, code in SVC.items()}

PF_MSEC, PF_COMMAND = 1 << 0, 1 << 1
PF_VELOCITY1, PF_MODEL, PF_SKINNUM = 1 << 2, 1 << 5, 1 << 6
PF_EFFECTS, PF_WEAPONFRAME = 1 << 7, 1 << 8
U_ORIGIN1, U_ORIGIN2, U_ORIGIN3, U_ANGLE2, U_FRAME, U_REMOVE, U_MOREBITS = (
    1 << 9,
    1 << 10,
    1 << 11,
    1 << 12,
    1 << 13,
    1 << 14,
    1 << 15,
)
U_ANGLE1, U_ANGLE3, U_MODEL, U_COLORMAP, U_SKIN, U_EFFECTS = 1, 2, 4, 8, 16, 32
SND_VOLUME, SND_ATTENUATION = 1 << 15, 1 << 14
# temp entity kinds and the bytes after the kind (src/protocol.h, sv_send.c)
_TE_SIZE = {
    0: 6,
    1: 6,
    2: 7,
    3: 6,
    4: 6,
    5: 14,
    6: 14,
    7: 6,
    8: 6,
    9: 14,
    10: 6,
    11: 6,
    12: 7,
    13: 6,
}


class ProtocolError(ValueError):
    """A server message this client cannot parse (the rest of the packet is skipped)."""


# ---------------------------------------------------------------------------------------------
# the move checksum


def load_checksum_table(common_c: str) -> bytes:
    """The 1,024-byte ``chktbl`` read from the text of the server's ``src/common.c``.

    Only the table's first bytes are initialised in the source; the rest are zeros (as the
    C compiler fills them).  QuakeWorld 2.40 (QuakeTM) declares it ``chktbl[1024 + 4]`` and
    takes the sequence modulo ``sizeof - 8``, mvdsv ``chktbl[1024]`` modulo ``sizeof - 4``:
    the same 1,024 bytes and the same modulus, so the padding is dropped.  Raises
    :class:`ValueError` when the table is not found.
    """
    match = re.search(
        r"chktbl\s*\[\s*(\d+)\s*(?:\+\s*(\d+)\s*)?\]\s*=\s*\{(.*?)\};", common_c, re.S
    )
    if not match:
        raise ValueError("no chktbl table in the server's common.c")
    size, padding = int(match.group(1)), int(match.group(2) or 0)
    body = re.sub(r"//[^\n]*", "", match.group(3))
    values = [int(tok, 16) for tok in re.findall(r"0x[0-9a-fA-F]{1,2}", body)]
    if not values or len(values) > size + padding:
        raise ValueError("chktbl in common.c does not have the expected shape")
    return (bytes(values) + bytes(size + padding - len(values)))[:size]


def _crc_table() -> list[int]:
    """CRC-16/CCITT (polynomial 0x1021), the CRC the QuakeWorld sources use."""
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
        table.append(crc & 0xFFFF)
    return table


_CRC = _crc_table()


def crc16(data: bytes) -> int:
    """CRC-16/CCITT with initial value 0xffff and no final xor."""
    crc = 0xFFFF
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC[(crc >> 8) ^ byte]
    return crc


def sequence_checksum(table: bytes, block: bytes, sequence: int) -> int:
    """The checksum byte of a move: CRC over (at most 60 of) its bytes and 4 sequence bytes."""
    p = sequence % (len(table) - 4)
    chk = bytearray(block[:60])
    chk += bytes(
        [
            (sequence & 0xFF) ^ table[p],
            table[p + 1],
            ((sequence >> 8) & 0xFF) ^ table[p + 2],
            table[p + 3],
        ]
    )
    return crc16(bytes(chk)) & 0xFF


# ---------------------------------------------------------------------------------------------
# client messages


@dataclass(frozen=True)
class UserCmd:
    """One user command: view angles (degrees), moves (units/s), buttons, impulse, msec."""

    msec: int = 0
    angles: tuple[float, float, float] = (0.0, 0.0, 0.0)
    forward: int = 0
    side: int = 0
    up: int = 0
    buttons: int = 0
    impulse: int = 0


NULL_CMD = UserCmd()


def _angle16(degrees: float) -> int:
    return int(degrees * 65536 / 360) & 0xFFFF


def write_delta_usercmd(old: UserCmd, new: UserCmd) -> bytes:
    """``MSG_WriteDeltaUsercmd``: a bit byte, the changed fields, then msec."""
    bits = 0
    out = bytearray()
    if _angle16(new.angles[0]) != _angle16(old.angles[0]):
        bits |= CM_ANGLE1
    if _angle16(new.angles[1]) != _angle16(old.angles[1]):
        bits |= CM_ANGLE2
    if _angle16(new.angles[2]) != _angle16(old.angles[2]):
        bits |= CM_ANGLE3
    if new.forward != old.forward:
        bits |= CM_FORWARD
    if new.side != old.side:
        bits |= CM_SIDE
    if new.up != old.up:
        bits |= CM_UP
    if new.buttons != old.buttons:
        bits |= CM_BUTTONS
    if new.impulse != old.impulse:
        bits |= CM_IMPULSE
    out.append(bits)
    for flag, index in ((CM_ANGLE1, 0), (CM_ANGLE2, 1), (CM_ANGLE3, 2)):
        if bits & flag:
            out += struct.pack("<H", _angle16(new.angles[index]))
    for flag, value in ((CM_FORWARD, new.forward), (CM_SIDE, new.side), (CM_UP, new.up)):
        if bits & flag:
            out += struct.pack("<h", value)
    if bits & CM_BUTTONS:
        out.append(new.buttons & 0xFF)
    if bits & CM_IMPULSE:
        out.append(new.impulse & 0xFF)
    out.append(max(0, min(255, new.msec)))
    return bytes(out)


def move_message(
    table: bytes, sequence: int, cmds: tuple[UserCmd, UserCmd, UserCmd], loss_percent: int = 0
) -> bytes:
    """A ``clc_move``: checksum, loss, and the oldest, previous and newest commands.

    ``sequence`` is the netchan outgoing sequence of the packet that will carry the move.
    """
    oldest, previous, newest = cmds
    body = (
        bytes([loss_percent & 0xFF])
        + write_delta_usercmd(NULL_CMD, oldest)
        + write_delta_usercmd(oldest, previous)
        + write_delta_usercmd(previous, newest)
    )
    return bytes([CLC_MOVE, sequence_checksum(table, body, sequence)]) + body


def string_command(text: str) -> bytes:
    """A ``clc_stringcmd`` carrying ``text`` (no newline)."""
    return bytes([CLC_STRINGCMD]) + text.encode("latin-1") + b"\0"


def connectionless(text: str) -> bytes:
    return CONNECTIONLESS + text.encode("latin-1")


# ---------------------------------------------------------------------------------------------
# netchan


@dataclass
class Netchan:
    """The QuakeWorld netchan of one client (``net_chan.c``): sequences and one reliable.

    A reliable message (string commands) is resent in every packet until the server's
    acknowledgement carries the reliable bit this side toggled; the server's reliable
    messages are acknowledged by echoing its bit in :attr:`incoming_reliable_sequence`.
    """

    qport: int
    outgoing_sequence: int = 1
    incoming_sequence: int = 0
    incoming_acknowledged: int = 0
    incoming_reliable_acknowledged: int = 0
    incoming_reliable_sequence: int = 0
    reliable_sequence: int = 0
    last_reliable_sequence: int = 0
    reliable: bytes = b""
    pending: bytearray = field(default_factory=bytearray)

    def queue_reliable(self, data: bytes) -> None:
        self.pending += data

    def transmit(self, unreliable: bytes = b"") -> tuple[bytes, int]:
        """The next packet to send and its sequence number."""
        send_reliable = False
        if (
            self.incoming_acknowledged > self.last_reliable_sequence
            and self.incoming_reliable_acknowledged != self.reliable_sequence
        ):
            send_reliable = True  # the last reliable was lost: resend it
        if not self.reliable and self.pending:
            self.reliable = bytes(self.pending[:1024])
            del self.pending[:1024]
            self.reliable_sequence ^= 1
            send_reliable = True
        sequence = self.outgoing_sequence
        w1 = sequence | (0x80000000 if send_reliable else 0)
        w2 = self.incoming_sequence | (self.incoming_reliable_sequence << 31)
        self.outgoing_sequence += 1
        packet = struct.pack("<IIH", w1 & 0xFFFFFFFF, w2 & 0xFFFFFFFF, self.qport & 0xFFFF)
        if send_reliable:
            packet += self.reliable
            self.last_reliable_sequence = self.outgoing_sequence
        return packet + unreliable, sequence

    def process(self, packet: bytes) -> bytes | None:
        """The payload of a server packet, or None for a duplicate or out-of-order one."""
        if len(packet) < 8:
            return None
        w1, w2 = struct.unpack_from("<II", packet)
        reliable_message, reliable_ack = w1 >> 31, w2 >> 31
        sequence, sequence_ack = w1 & 0x7FFFFFFF, w2 & 0x7FFFFFFF
        if sequence <= self.incoming_sequence:
            return None
        if reliable_ack == self.reliable_sequence:
            self.reliable = b""  # the server has our last reliable message
        self.incoming_sequence = sequence
        self.incoming_acknowledged = sequence_ack
        self.incoming_reliable_acknowledged = reliable_ack
        if reliable_message:
            self.incoming_reliable_sequence ^= 1
        return packet[8:]


# ---------------------------------------------------------------------------------------------
# server messages


@dataclass
class ServerEvents:
    """What one server payload said that a synthetic client acts on or records."""

    stufftext: list[str] = field(default_factory=list)
    serverdata: tuple[int, int] | None = None  # (servercount, playernum)
    soundlist_next: int | None = None
    modellist_next: int | None = None
    origins: dict[int, tuple[float, float, float]] = field(default_factory=dict)
    disconnect: bool = False
    messages: int = 0
    parse_error: str | None = None


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def left(self) -> int:
        return len(self.data) - self.pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ProtocolError("message runs past the packet")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def byte(self) -> int:
        return self.take(1)[0]

    def short(self) -> int:
        return struct.unpack("<h", self.take(2))[0]

    def long(self) -> int:
        return struct.unpack("<i", self.take(4))[0]

    def float(self) -> float:
        return struct.unpack("<f", self.take(4))[0]

    def coord(self) -> float:
        return self.short() / 8.0

    def string(self) -> str:
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise ProtocolError("unterminated string")
        text = self.data[self.pos : end].decode("latin-1")
        self.pos = end + 1
        return text


def _skip_delta_usercmd(r: _Reader) -> None:
    bits = r.byte()
    for flag, size in (
        (CM_ANGLE1, 2),
        (CM_ANGLE2, 2),
        (CM_ANGLE3, 2),
        (CM_FORWARD, 2),
        (CM_SIDE, 2),
        (CM_UP, 2),
        (CM_BUTTONS, 1),
        (CM_IMPULSE, 1),
    ):
        if bits & flag:
            r.take(size)
    r.byte()  # msec


def _skip_baseline(r: _Reader) -> None:
    r.take(4)  # model, frame, colormap, skin
    r.take(9)  # 3 x (coord, angle)


def _skip_entity_deltas(r: _Reader) -> None:
    while True:
        word = r.short() & 0xFFFF
        if word == 0:
            return
        bits = word & ~511
        if bits & U_MOREBITS:
            bits |= r.byte()
        if bits & U_MODEL:
            r.byte()
        if bits & U_FRAME:
            r.byte()
        if bits & U_COLORMAP:
            r.byte()
        if bits & U_SKIN:
            r.byte()
        if bits & U_EFFECTS:
            r.byte()
        for origin, angle in ((U_ORIGIN1, U_ANGLE1), (U_ORIGIN2, U_ANGLE2), (U_ORIGIN3, U_ANGLE3)):
            if bits & origin:
                r.take(2)
            if bits & angle:
                r.byte()


def _list_message(r: _Reader) -> int:
    r.byte()  # first index
    while r.string():
        pass
    return r.byte()  # next index, 0 when the list is complete


_FIXED = {  # message -> bytes after the code
    "nop": 0,
    "updatestat": 2,
    "setangle": 3,
    "updatefrags": 3,
    "stopsound": 2,
    "damage": 8,
    "setpause": 1,
    "killedmonster": 0,
    "foundsecret": 0,
    "spawnstaticsound": 9,
    "intermission": 9,
    "cdtrack": 1,
    "sellscreen": 0,
    "smallkick": 0,
    "bigkick": 0,
    "updateping": 3,
    "updateentertime": 5,
    "updatestatlong": 5,
    "muzzleflash": 2,
    "chokecount": 1,
    "maxspeed": 4,
    "entgravity": 4,
    "updatepl": 2,
    "particle": 11,
}


def parse_server_message(payload: bytes) -> ServerEvents:
    """Parse a server payload (after the netchan header) into :class:`ServerEvents`.

    A message this parser does not know stops the parse (recorded in ``parse_error``);
    what came before it is kept.
    """
    events = ServerEvents()
    r = _Reader(payload)
    try:
        while r.left() > 0:
            code = r.byte()
            name = _SVC_NAME.get(code)
            if name is None:
                raise ProtocolError(f"unknown server message {code}")
            events.messages += 1
            if name in _FIXED:
                r.take(_FIXED[name])
            elif name == "bad":
                raise ProtocolError("svc_bad")
            elif name == "disconnect":
                events.disconnect = True
                return events
            elif name == "print":
                r.byte()
                r.string()
            elif name in ("stufftext",):
                events.stufftext.append(r.string())
            elif name in ("centerprint", "finale"):
                r.string()
            elif name == "serverdata":
                r.long()  # protocol
                servercount = r.long()
                r.string()  # game directory
                # bit 7 flags a spectator; our clients are players (maxspectators 0), and
                # with MAX_CLIENTS 256 players 128..255 set it too: the whole byte is ours
                playernum = r.byte()
                r.string()  # level name
                r.take(40)  # ten movevars
                events.serverdata = (servercount, playernum)
            elif name == "lightstyle":
                r.byte()
                r.string()
            elif name == "sound":
                channel = r.short() & 0xFFFF
                if channel & SND_VOLUME:
                    r.byte()
                if channel & SND_ATTENUATION:
                    r.byte()
                r.take(7)  # sound number, origin
            elif name == "spawnstatic":
                _skip_baseline(r)
            elif name == "spawnbaseline":
                r.short()
                _skip_baseline(r)
            elif name == "temp_entity":
                kind = r.byte()
                if kind not in _TE_SIZE:
                    raise ProtocolError(f"unknown temp entity {kind}")
                r.take(_TE_SIZE[kind])
            elif name == "updateuserinfo":
                r.take(5)
                r.string()
            elif name == "setinfo":
                r.byte()
                r.string()
                r.string()
            elif name == "serverinfo":
                r.string()
                r.string()
            elif name == "download":
                size = r.short()
                r.byte()
                if size > 0:
                    r.take(size)
            elif name == "playerinfo":
                num = r.byte()
                flags = r.short() & 0xFFFF
                origin = (r.coord(), r.coord(), r.coord())
                r.byte()  # frame
                if flags & PF_MSEC:
                    r.byte()
                if flags & PF_COMMAND:
                    _skip_delta_usercmd(r)
                for axis in range(3):
                    if flags & (PF_VELOCITY1 << axis):
                        r.short()
                for flag in (PF_MODEL, PF_SKINNUM, PF_EFFECTS, PF_WEAPONFRAME):
                    if flags & flag:
                        r.byte()
                events.origins[num] = origin
            elif name in ("nails", "nails2"):
                count = r.byte()
                r.take(count * (6 if name == "nails" else 7))
            elif name == "modellist":
                events.modellist_next = _list_message(r)
            elif name == "soundlist":
                events.soundlist_next = _list_message(r)
            elif name == "packetentities":
                _skip_entity_deltas(r)
            elif name == "deltapacketentities":
                r.byte()
                _skip_entity_deltas(r)
            else:  # pragma: no cover - every name above is handled
                raise ProtocolError(f"unhandled server message {name}")
    except ProtocolError as error:
        events.parse_error = str(error)
    return events


def read_common_c(source_tree: Path) -> str:
    """The text of ``common.c`` in an unpacked server source tree: mvdsv's ``src/``, or
    QuakeWorld 2.40's ``server/`` (QuakeTM)."""
    for folder in ("src", "server"):
        path = source_tree / folder / "common.c"
        if path.is_file():
            return path.read_text(encoding="latin-1")
    return (source_tree / "src" / "common.c").read_text(encoding="latin-1")  # (names it)
