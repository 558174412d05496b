"""The Python API refuses what the command line refuses, in one line, before allocating: files
that are not regular files, numbers too long or too large for a float, sections replaced by
values of the wrong type, JSON that is not a scenario, a crowd no map holds."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv import KeepWindow, Scenario, load_scenario, run
from simsrv.cli.main import main
from simsrv.core.errors import InputError
from simsrv.scenario.schema import PlayersSection
from simsrv.world.proximity import least_pairs

ROOT = Path(__file__).resolve().parents[1]
SHORT = ["run.duration_s=0.2", "run.warmup_s=0.1"]


def one_line(error: pytest.ExceptionInfo) -> str:
    text = str(error.value)
    assert "\n" not in text
    return text


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return load_scenario(ROOT / "scenarios/cube-160.toml", SHORT)


@pytest.mark.parametrize("field", ["start_s", "end_s"])
def test_a_window_bound_no_float_holds_is_refused(field):
    with pytest.raises(InputError) as error:
        KeepWindow(**{field: 10**400})
    assert one_line(error).startswith(f"KeepWindow.{field}: must be a number of seconds a float")


def test_a_window_keeps_its_bounds_as_floats():
    window = KeepWindow(start_s=2, end_s=3)
    assert (type(window.start_s), type(window.end_s)) == (float, float)


def test_an_override_of_5000_digits_is_refused_in_one_line(capsys):
    with pytest.raises(InputError) as error:
        load_scenario(None, ["players.count=" + "9" * 5000])
    assert "a number too long to read" in one_line(error)
    assert main(["run", "--set", "players.count=" + "9" * 5000]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_scenario_file_with_a_5000_digit_number_is_refused(tmp_path):
    path = tmp_path / "long.toml"
    path.write_text("[players]\ncount = " + "9" * 5000 + "\n")
    with pytest.raises(InputError) as error:
        load_scenario(path)
    assert one_line(error).endswith("holds a number too long to read")


def test_a_nul_byte_in_a_path_is_refused():
    with pytest.raises(InputError) as error:
        load_scenario("scenarios/cube\x00-160.toml")
    assert one_line(error) == "scenario: not a usable file name: 'scenarios/cube\\x00-160.toml'"


def test_a_device_is_refused_without_reading_it():
    start = time.perf_counter()
    with pytest.raises(InputError) as error:
        load_scenario("/dev/zero")
    assert one_line(error) == "scenario: /dev/zero is not a regular file"
    assert time.perf_counter() - start < 5


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "scenario.toml"
    os.mkfifo(fifo)
    with pytest.raises(InputError) as error:
        load_scenario(fifo)  # opening a FIFO to read blocks until a writer comes: never here
    assert one_line(error) == f"scenario: {fifo} is not a regular file"


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(InputError) as error:
        load_scenario(tmp_path)
    assert one_line(error) == f"scenario: {tmp_path} is a directory"


def test_a_section_given_as_a_table_is_validated_into_the_section(scenario):
    copied = scenario.model_copy(update={"run": {"duration_s": 0.3, "warmup_s": 0.1}})
    assert copied.run.duration_s == 0.3 and copied.run.seed == 1


@pytest.mark.parametrize(
    ("update", "message"),
    [
        ({"run": None}, "scenario.run: Input should be a valid dictionary or instance of Run"),
        ({"bogus": 1}, "scenario.bogus: unknown field; allowed fields: clients, cluster,"),
        ({"run": {"duration_s": -1}}, "scenario.run.duration_s: Input should be greater"),
        ({"players": 5}, "scenario.players: Input should be a valid dictionary or instance"),
    ],
)
def test_a_scenario_copy_is_validated(scenario, update, message):
    with pytest.raises(InputError) as error:
        scenario.model_copy(update=update)
    assert one_line(error).startswith(message)


def test_a_section_copy_is_validated(scenario):
    with pytest.raises(InputError) as error:
        scenario.players.model_copy(update={"count": "160"})
    assert one_line(error) == 'PlayersSection.count: must be a number, not a string, got "160"'
    with pytest.raises(InputError) as error:
        scenario.players.model_copy(update={"speed_x": 1})
    assert one_line(error).startswith("PlayersSection.speed_x: unknown field; allowed fields:")


def test_a_numpy_integer_through_a_copy_runs_as_the_integer(scenario):
    players = scenario.players.model_copy(update={"count": np.int64(8)})
    with_numpy = run(scenario.model_copy(update={"players": players}))
    as_int = run(scenario.model_copy(update={"players": players.model_copy(update={"count": 8})}))
    assert with_numpy.summary == as_int.summary


@pytest.mark.parametrize(
    ("model", "text", "message"),
    [
        (Scenario, '{"x": 1}', "x: unknown field"),
        (Scenario, "{", "scenario: Invalid JSON"),
        (PlayersSection, '{"count": "5"}', "PlayersSection.count: must be a number, not a"),
    ],
)
def test_json_that_is_not_a_scenario_is_one_line(model, text, message):
    with pytest.raises(InputError) as error:
        model.model_validate_json(text)
    assert one_line(error).startswith(message)


def test_ten_million_players_on_a_small_map_are_refused_before_they_are_placed(capsys):
    start = time.perf_counter()
    assert main(["run", "--set", "players.count=10000000"]) == 2
    assert time.perf_counter() - start < 5
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "players.count: 10000000 players" in err


@settings(max_examples=60, deadline=None)
@given(
    count=st.integers(1, 60),
    size=st.tuples(*[st.floats(1, 2000)] * 3),
    edge=st.floats(1, 600),
    seed=st.integers(0, 2**32 - 1),
)
def test_least_pairs_never_exceeds_the_pairs_of_any_placement(count, size, edge, seed):
    """The pigeonhole bound holds for any placement: here uniform ones and all in a corner."""
    high = np.array(size)
    rng = np.random.default_rng(seed)
    bound = least_pairs(count, np.zeros(3), high, edge)
    for points in (rng.uniform(0, high, (count, 3)), np.zeros((count, 3))):
        gaps = np.abs(points[:, None, :] - points[None, :, :]).max(axis=2)
        pairs = int(np.triu(gaps <= edge / 2, 1).sum())
        assert bound <= pairs


@pytest.mark.parametrize("edge", [5e-324, 1e-300, 0.0])
def test_least_pairs_of_a_vanishing_range_is_zero(edge):
    assert least_pairs(40, np.zeros(3), np.full(3, 4096.0), edge) == 0


def test_least_pairs_is_exact_for_an_even_spread():
    # 8 cubes of half an edge; 16 players, 2 per cube: 8 pairs at least
    assert least_pairs(16, np.zeros(3), np.full(3, 100.0), 100.0) == 8
    assert least_pairs(8, np.zeros(3), np.full(3, 100.0), 100.0) == 0


@pytest.mark.parametrize("name", ["summary.csv", "report.html"])
def test_a_sweep_output_that_is_a_directory_is_refused_before_any_run(capsys, tmp_path, name):
    (tmp_path / "base.toml").write_text("[run]\nduration_s = 0.1\nwarmup_s = 0.05\n")
    (tmp_path / "w.toml").write_text('base = "base.toml"\nseeds = 1\n')
    (tmp_path / "out" / name).mkdir(parents=True)
    assert main(["sweep", str(tmp_path / "w.toml"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"simsrv: error: --out: {tmp_path / 'out' / name} exists and is not a file; remove it\n"
    )
    assert not (tmp_path / "out" / "runs").exists() or not any(
        (tmp_path / "out" / "runs").iterdir()
    )
