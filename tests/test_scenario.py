"""Scenario loading, defaults and dotted overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from simsrv.core.errors import InputError
from simsrv.pipeline.load import load_scenario

ROOT = Path(__file__).resolve().parents[1]


def test_default_scenario_file_spells_out_the_defaults():
    assert load_scenario(ROOT / "scenarios" / "cube-160.toml") == load_scenario(None)


def test_every_scenario_file_loads():
    files = sorted((ROOT / "scenarios").rglob("*.toml"))
    assert files
    for path in files:
        load_scenario(path)


def test_overrides_are_coerced_to_the_field_type():
    s = load_scenario(
        None,
        [
            "machine.cpus=4",
            "players.count=320",
            "clients.jitter_s=0.001",
            "map.size=3000",
            "clients.bandwidth_control=true",
        ],
    )
    assert s.machine.cpus == 4 and isinstance(s.machine.cpus, int)
    assert s.players.count == 320
    assert s.map.params.size == 3000.0
    assert s.clients.bandwidth_control is True
    assert s.max_messages_per_frame == 320  # defaults to one per client slot


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["machine.cpus=0"], "machine.cpus: Input should be greater than or equal to 1"),
        (["machine.cpus=two"], "machine.cpus: must be a number, not a string"),
        (["map.sizee=3"], "map.sizee: unknown field; allowed fields: door_width, height"),
        (["bogus.x=1"], "bogus.x: unknown section 'bogus'"),
        (["server.strategy=magic"], "server.strategy: unknown strategy 'magic'; allowed:"),
        (
            ["map.kind=moon"],
            "map.kind: unknown map kind 'moon'; "
            "allowed: arena, bsp, cube, death32c-like, file, hotspots, rooms, two-floor",
        ),
        (["players.mobility=fly"], "players.mobility: unknown mobility model 'fly'"),
        (["clients.packet_loss=1.5"], "clients.packet_loss: Input should be less than 1"),
        (["clients.jitter_s=0.5"], "clients.jitter_s: must be smaller than 1/rate_hz"),
        (["machine.platform=vax"], "machine.platform: unknown platform 'vax'"),
        (["machine.costs.warp=1"], "machine.costs.warp: unknown cost; allowed:"),
        (["server.options.x=1"], "server.options.x: unknown field"),
        (["machine.cpus"], "expected dotted.name=value"),
        (["map.door_width=1500"], "map.door_width: must be smaller than half the size"),
        (["machine.costs.fork=nan"], "machine.costs.fork: Input should be a finite number"),
        (["map.size=inf"], "map.size: Input should be a finite number"),
        (["run.duration_s=nan"], "run.duration_s: Input should be a finite number"),
        (
            ["server.strategy=abdelkhalek", "server.options.threads=-1"],
            "server.options.threads: Input should be greater than or equal to 0; "
            "or Input should be 'per-client', got -1",
        ),
        (
            ["server.strategy=bsp-group", "server.options.balancer=magic"],
            "server.options.balancer: unknown balancer 'magic'; allowed:",
        ),
        (["server.options.x=1"], "server.options.x: unknown field; allowed fields: none"),
        (
            ["server.reply_max_bytes=30"],
            "server.reply_header_bytes: must be smaller than reply_max_bytes = 30, got 40",
        ),
    ],
)
def test_bad_values_name_the_field(overrides, message):
    with pytest.raises(InputError) as error:
        load_scenario(None, overrides)
    text = str(error.value)
    assert message in text
    assert "\n" not in text


def test_malformed_and_missing_files(tmp_path):
    (tmp_path / "dir.toml").mkdir()
    bad = tmp_path / "bad.toml"
    bad.write_text("[run\nseed = 1\n")
    with pytest.raises(InputError, match="is not valid TOML"):
        load_scenario(bad)
    with pytest.raises(InputError, match="file not found"):
        load_scenario(tmp_path / "missing.toml")
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(InputError, match="^scenario: .* is not UTF-8 text"):
        load_scenario(binary)
    with pytest.raises(InputError, match="^machine.platform: .*dir.toml is a directory$"):
        load_scenario(None, [f"machine.platform={tmp_path}/dir.toml"])
    wrong = tmp_path / "wrong.toml"
    wrong.write_text("run = 3\n")
    with pytest.raises(InputError, match=r"run: must be a table"):
        load_scenario(wrong)
