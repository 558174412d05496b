"""Ctrl-C anywhere, compiled code included, ends a command with one line and status 130."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simsrv import load_scenario, run
from simsrv.cli.main import main
from simsrv.core.errors import interrupted
from simsrv.pipeline import result
from tests.child_signals import default_sigint

ROOT = Path(__file__).resolve().parents[1]


def _returned_with_an_exception_set() -> SystemError:
    """The error numba's dispatcher raises when Ctrl-C arrives as compiled code returns."""
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as interrupt:
            raise SystemError(
                "CPUDispatcher(<function f>) returned a result with an exception set"
            ) from interrupt
    except SystemError as error:
        return error


def test_an_interrupt_is_recognised_through_its_causes():
    assert interrupted(KeyboardInterrupt())
    assert interrupted(_returned_with_an_exception_set())
    assert not interrupted(SystemError("something else"))
    assert not interrupted(ValueError())


@pytest.fixture
def interrupted_simulation(monkeypatch):
    def simulate(*_args, **_kwargs):
        raise _returned_with_an_exception_set()

    monkeypatch.setattr(result, "simulate", simulate)


def test_a_run_that_keeps_going_on_errors_still_stops_on_an_interrupt(interrupted_simulation):
    scenario = load_scenario(None, ["run.duration_s=0.2", "run.warmup_s=0.1"])
    with pytest.raises(KeyboardInterrupt):
        run(scenario, raise_errors=False)


def test_the_command_line_says_interrupted_in_one_line(interrupted_simulation, capsys):
    assert main(["run", "--set", "run.duration_s=0.2", "--set", "run.warmup_s=0.1"]) == 130
    captured = capsys.readouterr()
    assert captured.err == "simsrv: interrupted\n" and captured.out == ""


def test_ctrl_c_during_the_compiled_neighbour_search_is_one_line():
    """3,000 clients per thread: most of the run is the compiled cell list."""
    command = [
        sys.executable, "-m", "simsrv", "run", "scenarios/scale/abdelkhalek-clients1000-cpus8.toml",
        "--set", "players.count=24000", "--set", "run.duration_s=60",
    ]  # fmt: skip
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    )
    time.sleep(6.0)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err.decode()[-2000:]
    assert err.decode() == "simsrv: interrupted\n" and out == b""
