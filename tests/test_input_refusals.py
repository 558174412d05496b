"""Inputs that used to be accepted silently and are now one-line errors (issue 26)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simsrv.cli.main import main
from simsrv.cli.validate_command import only_names
from simsrv.errors import InputError
from simsrv.platforms.profile import load_platform
from simsrv.scenario.load import load_scenario
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
    import simsrv.cli.validate_command as command

    def no_run(*args, **kwargs):
        raise AssertionError("validation started")

    monkeypatch.setattr(command, "validate", no_run)
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
