"""Inputs that used to be accepted silently and are now one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simsrv.cli.main import main
from simsrv.cli.validate_command import only_names
from simsrv.core.errors import InputError
from simsrv.pipeline.load import load_scenario
from simsrv.platforms.profile import load_platform
from tests.schema_fields import is_number, list_depth, schema_fields

ROOT = Path(__file__).resolve().parents[1]


def _one_line_error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("simsrv: error: ") and captured.err.count("\n") == 1
    return captured.err


def test_scheduler_without_the_dask_backend_is_refused(tmp_path, capsys):
    """Failure 4: ``--backend local --scheduler ...`` used to ignore the scheduler and run."""
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(f'base = "{ROOT / "scenarios" / "cube-160.toml"}"\nseeds = 1\n')
    out = tmp_path / "out"
    argv = ["sweep", str(sweep), "--out", str(out), "--backend", "local"]
    err = _one_line_error(capsys, [*argv, "--scheduler", "tcp://127.0.0.1:1"])
    assert "--scheduler: only used with --backend dask, got --backend local" in err
    assert not (out / "runs").exists()  # refused before any run


def test_scheduler_is_refused_with_the_default_backend_too(tmp_path, capsys):
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(f'base = "{ROOT / "scenarios" / "cube-160.toml"}"\nseeds = 1\n')
    err = _one_line_error(capsys, ["sweep", str(sweep), "--scheduler", "tcp://127.0.0.1:1"])
    assert "--scheduler: only used with --backend dask" in err


@pytest.mark.parametrize("only", ["", ",", " ", "area2004,", ",area2004", "area2004,,area2004"])
def test_an_empty_only_name_is_refused(capsys, only):
    """Failure 6: ``--only ""`` used to select every row and start the full validation."""
    err = _one_line_error(capsys, ["validate", "--list", "--only", only])
    assert f"--only: empty name in {only!r}" in err


def test_an_empty_only_name_is_refused_before_any_run(capsys, monkeypatch):
    import importlib

    # the command imports validate() from this module when it runs (the package's own
    # attribute of that name is the function, hence import_module)
    module = importlib.import_module("simsrv.validation.validate")

    def no_run(*args, **kwargs):
        raise AssertionError("validation started")

    monkeypatch.setattr(module, "validate", no_run)
    _one_line_error(capsys, ["validate", "--quick", "--only", "area2004", "--only", ""])


def test_only_names_split_commas_and_repeats():
    assert only_names([]) == []
    assert only_names(["area2004, ab04-capacity-gain", "cordeiro2007"]) == [
        "area2004",
        "ab04-capacity-gain",
        "cordeiro2007",
    ]


NUMBER_FIELDS = [field for field in schema_fields() if is_number(field)]


@pytest.mark.parametrize("field", NUMBER_FIELDS, ids=lambda field: field.key)
@pytest.mark.parametrize("boolean", ["true", "false"])
def test_a_boolean_is_never_a_number(field, boolean):
    """Failure 5: ``--set run.duration_s=true`` used to run with 1.0 s; every number field of
    every section, map kind, mobility model, strategy and cost now refuses a boolean."""
    value = "[" * list_depth(field) + boolean + "]" * list_depth(field)
    with pytest.raises(InputError) as caught:
        load_scenario(None, [*field.context, f"{field.key}={value}"])
    message = str(caught.value)
    assert message.startswith(f"{field.key}: must be a number, not a boolean, got {value}")
    assert "\n" not in message


@pytest.mark.parametrize("field", NUMBER_FIELDS, ids=lambda field: field.key)
def test_a_numeric_string_is_never_a_number(field):
    """``--set 'run.duration_s="20"'`` is text, not 20: every number field of every section,
    map kind, mobility model, strategy and cost refuses a string that pydantic would convert."""
    value = "[" * list_depth(field) + '"1"' + "]" * list_depth(field)
    with pytest.raises(InputError) as caught:
        load_scenario(None, [*field.context, f"{field.key}={value}"])
    message = str(caught.value)
    assert message.startswith(f"{field.key}: must be a number, not a string, got")
    assert "\n" not in message


@pytest.mark.parametrize(
    "line",
    ['irq_cpu = "0"', 'softirq_share = "0.5"', 'netdev_max_backlog = "300"',
     'wakeup_latency_us = "10"', 'smt_throughput = "0.6"'],
)  # fmt: skip
def test_a_numeric_string_in_a_platform_file_is_refused(tmp_path, line):
    path = tmp_path / "p.toml"
    path.write_text(f'name = "p"\ncpus = 2\n{line}\n[costs]\nsignal_send = 0.0\n')
    key = line.split(" =")[0]
    with pytest.raises(InputError, match=rf"{key}: must be a number, not a string"):
        load_platform(str(path))
    path.write_text('name = "p"\n[costs]\nsignal_send = "1.2"\n')
    with pytest.raises(InputError, match=r"costs\.signal_send: must be a number, not a string"):
        load_platform(str(path))


def test_a_string_a_union_takes_as_it_is_is_still_accepted():
    scenario = load_scenario(
        None, ["server.strategy=abdelkhalek", 'server.options.threads="per-client"']
    )
    assert scenario.server.options.threads == "per-client"


def test_numbers_and_real_booleans_are_still_accepted():
    scenario = load_scenario(
        None, ["run.duration_s=1", "players.count=7", "players.respawn=true", "map.kind=hotspots"]
    )
    assert scenario.run.duration_s == 1.0 and scenario.players.count == 7
    assert scenario.players.respawn is True


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("[players]\ncount = true\n", "players.count"),
        ('[map]\nkind = "death32c-like"\nhotspots = true\n', "map.hotspots"),
        ("[machine.costs]\nworld_base = false\n", "machine.costs.world_base"),
    ],
)
def test_a_boolean_in_a_scenario_file_is_a_one_line_error(tmp_path, capsys, text, field):
    path = tmp_path / "s.toml"
    path.write_text(text)
    err = _one_line_error(capsys, ["run", str(path)])
    assert f"{field}: must be a number, not a boolean" in err


def test_a_boolean_cost_in_a_platform_file_is_refused(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('name = "p"\n[costs]\nworld_base = true\n')
    with pytest.raises(InputError, match=r"costs\.world_base: must be a number, not a boolean"):
        load_platform(str(path))


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "clients.rate_hz=1e-12",
            "clients.rate_hz: 1e-12 Hz is too low for 160 players to send one packet in the "
            "run (run.duration_s = 10 s); must be >= 0.000625 Hz",
        ),
        (
            "run.duration_s=1e-12",
            "run.duration_s: 1e-12 s is too short for one client packet (160 players x "
            "clients.rate_hz = 31.25 Hz), so the run would measure nothing; must be >= 0.0002 s",
        ),
        ("server.reply_max_entities=9223372036854775807", "server.reply_max_entities: Input "),
        ("server.reply_max_bytes=100000", "server.reply_max_bytes: Input should be less"),
        ("server.max_messages_per_frame=1e12", "server.max_messages_per_frame: must be a whole"),
        ("clients.socket_buffer_messages=1e9", "clients.socket_buffer_messages: must be a whole"),
        (
            "server.max_messages_per_frame=1000000000000",
            "server.max_messages_per_frame: Input should",
        ),
        ("run.seed=18446744073709551616", "run.seed: Input should be less than or equal to"),
    ],
)
def test_absurd_values_are_refused_naming_the_field(capsys, override, message):
    """Failure 7: these used to run silently (0 frames and every metric 0, or a seed beyond
    what a sweep stores)."""
    err = _one_line_error(capsys, ["run", "--set", override])
    assert err.startswith(f"simsrv: error: {message}")


def test_the_packet_bound_is_the_expected_count_in_the_window():
    """One packet expected in the measured window is enough; just below is refused."""
    ok = load_scenario(None, ["players.count=10", "clients.rate_hz=2", "run.duration_s=0.05"])
    assert ok.players.count * ok.clients.rate_hz * ok.run.duration_s == pytest.approx(1.0)
    with pytest.raises(InputError, match="run.duration_s: 0.049 s is too short"):
        load_scenario(None, ["players.count=10", "clients.rate_hz=2", "run.duration_s=0.049"])


def test_a_run_at_the_packet_bound_really_has_frames(capsys):
    """At the bound the run measures something: the refusal is not hiding runnable input."""
    sets = ["players.count=20", "clients.rate_hz=1", "run.duration_s=0.05", "run.warmup_s=0"]
    assert main(["run", "--json", *[a for s in sets for a in ("--set", s)]]) == 0
    assert json.loads(capsys.readouterr().out)["frames"] >= 1


@pytest.mark.parametrize("field", [f for f in NUMBER_FIELDS if "int" in str(f.annotation)])
def test_every_integer_field_has_a_maximum(field):
    text = str(field.annotation) + str(field.info.metadata)
    assert "le=" in text or "lt=" in text, field.key


def test_map_refuses_a_hundred_thousand_gif_frames(tmp_path, capsys):
    out = tmp_path / "m.gif"
    err = _one_line_error(capsys, ["map", "--out", str(out), "--frames", "100000"])
    assert "--frames: must be a whole number from 1 to 1000, got 100000" in err
    assert not out.exists()
