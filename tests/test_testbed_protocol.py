"""The QuakeWorld protocol pieces of the synthetic clients, without a server."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simsrv.testbed import protocol as qw
from simsrv.testbed.frames import RECORD, read_frames

COMMON_C = """
static byte chktbl[16] = {
	0x01,0x02,0x03,0x04,0x05,0x06,
	// only part of it
};
"""


def test_checksum_table_is_read_from_source_and_zero_filled():
    table = qw.load_checksum_table(COMMON_C)
    assert table == bytes([1, 2, 3, 4, 5, 6]) + bytes(10)
    with pytest.raises(ValueError, match="chktbl"):
        qw.load_checksum_table("int x;")


def test_crc16_is_ccitt_with_ffff_start():
    # CRC-16/CCITT-FALSE check value of "123456789"
    assert qw.crc16(b"123456789") == 0x29B1
    assert qw.crc16(b"") == 0xFFFF


def test_sequence_checksum_uses_at_most_60_bytes_and_the_sequence():
    table = bytes(range(256)) * 4
    block = bytes(range(100))
    assert qw.sequence_checksum(table, block, 7) == qw.sequence_checksum(table, block[:60], 7)
    p = 7 % (len(table) - 4)
    tail = bytes([(7 & 0xFF) ^ table[p], table[p + 1], 0 ^ table[p + 2], table[p + 3]])
    assert qw.sequence_checksum(table, block, 7) == qw.crc16(block[:60] + tail) & 0xFF


def test_delta_usercmd_writes_only_changed_fields_then_msec():
    new = qw.UserCmd(msec=13, angles=(0.0, 90.0, 0.0), forward=320, buttons=qw.BUTTON_JUMP)
    out = qw.write_delta_usercmd(qw.NULL_CMD, new)
    bits = qw.CM_ANGLE2 | qw.CM_FORWARD | qw.CM_BUTTONS
    assert out == bytes([bits]) + struct.pack("<H", 16384) + struct.pack("<h", 320) + bytes(
        [qw.BUTTON_JUMP, 13]
    )
    assert qw.write_delta_usercmd(new, new) == bytes([0, 13])


def test_move_message_checksum_covers_the_bytes_after_it():
    table = bytes(range(256)) * 4
    cmds = (qw.NULL_CMD, qw.UserCmd(msec=13), qw.UserCmd(msec=13, forward=320))
    msg = qw.move_message(table, 42, cmds)
    assert msg[0] == qw.CLC_MOVE
    assert msg[1] == qw.sequence_checksum(table, msg[2:], 42)


@given(st.lists(st.booleans(), min_size=1, max_size=40))
def test_netchan_resends_a_reliable_until_acknowledged(lost):
    """A reliable string command is carried by every packet after a loss until the server's
    acknowledgement toggles the reliable bit, then never again."""
    chan = qw.Netchan(qport=7)
    chan.queue_reliable(b"new")
    server_reliable_seen = 0  # the server toggles its incoming reliable bit per reliable
    for drop in lost:
        packet, sequence = chan.transmit()
        carries = bool(struct.unpack_from("<I", packet)[0] >> 31)
        if carries and not drop:
            server_reliable_seen ^= 1
        acknowledged = sequence if not drop else sequence - 1
        reply = struct.pack("<II", sequence + 1000, acknowledged | (server_reliable_seen << 31))
        chan.process(reply)
        if not drop and carries:
            assert chan.reliable == b""
    # once acknowledged, no packet carries it again
    if chan.reliable == b"":
        packet, _ = chan.transmit()
        assert not struct.unpack_from("<I", packet)[0] >> 31


def _string(text: str) -> bytes:
    return text.encode() + b"\0"


def test_parse_sign_on_messages_and_origins():
    payload = (
        bytes([qw.SVC["serverdata"]])
        + struct.pack("<ii", 28, 5)
        + _string("qw")
        + bytes([3])
        + _string("The Slipgate Complex")
        + bytes(40)
        + bytes([qw.SVC["stufftext"]])
        + _string("cmd spawn 5 0\n")
        + bytes([qw.SVC["soundlist"], 0])
        + _string("a.wav")
        + _string("")
        + bytes([0])
        + bytes([qw.SVC["playerinfo"], 3])
        + struct.pack("<H", qw.PF_MSEC)
        + struct.pack("<hhh", 80, -16, 200)
        + bytes([0, 9])
        + bytes([qw.SVC["packetentities"]])
        + struct.pack("<H", 0)
    )
    events = qw.parse_server_message(payload)
    assert events.parse_error is None
    assert events.serverdata == (5, 3)
    assert events.stufftext == ["cmd spawn 5 0\n"]
    assert events.soundlist_next == 0
    assert events.origins == {3: (10.0, -2.0, 25.0)}


def test_parse_keeps_what_came_before_an_unknown_message():
    events = qw.parse_server_message(
        bytes([qw.SVC["stufftext"]]) + _string("skins\n") + bytes([250, 1, 2])
    )
    assert events.stufftext == ["skins\n"]
    assert "unknown server message 250" in events.parse_error


def test_frame_records_become_a_table_and_a_partial_record_is_dropped(tmp_path):
    records = np.zeros(3, RECORD)
    records["wall_start_s"] = [1.0, 2.0, 3.0]
    records["wall_end_s"] = [1.0001, 2.0002, 3.0003]
    records["cpu_frame_s"] = 80e-6
    records["cpu_read_s"] = 30e-6
    records["cpu_recv_s"] = 5e-6
    records["cpu_physics_s"] = 10e-6
    records["cpu_send_s"] = 20e-6
    records["cpu_sendto_s"] = 12e-6
    records["packets"] = [1, 2, 3]
    records["edicts"] = [120, 121, 512]
    header = struct.pack("<IIII", 0x32425453, RECORD.itemsize, 0, 0)
    path = tmp_path / "frames.bin"
    path.write_bytes(header + records.tobytes() + b"\x01\x02\x03")
    table = read_frames(path)
    assert list(table["packets"]) == [1, 2, 3]
    assert list(table["edicts"]) == [120, 121, 512]
    assert table["wall_us"].round(3).tolist() == [100.0, 200.0, 300.0]
    assert table["execute_us"].round(6).tolist() == [25.0] * 3
    assert table["build_us"].round(6).tolist() == [8.0] * 3
    assert table["other_us"].round(6).tolist() == [20.0] * 3
    path.write_bytes(struct.pack("<IIII", 1, 2, 0, 0))
    with pytest.raises(ValueError, match="not a testbed frame file"):
        read_frames(path)
