"""Fuzzing the scenario file: every generated scenario runs (exit 0) or is refused with one
line (exit 2); never a traceback, a hang or a silent multi-line failure."""

from __future__ import annotations

import contextlib
import io
import signal
import tempfile
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simsrv.cli.main import main
from simsrv.core.errors import InputError
from simsrv.pipeline.load import load_scenario
from tests.scenario_fuzz import FIELDS, scenario_files, to_toml, toml_value, values

RUN_LIMIT_S = 60  # a single short run that takes longer than this is a hang


def run_file(text: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``simsrv run FILE --json`` on the scenario ``text``."""
    out, err = io.StringIO(), io.StringIO()

    def hang(signum, frame):
        raise TimeoutError(f"simsrv run took more than {RUN_LIMIT_S} s on:\n{text}")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(RUN_LIMIT_S)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "fuzz.toml"
            path.write_text(text)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(["run", str(path), "--json"])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, out.getvalue(), err.getvalue()


def check(text: str) -> None:
    code, out, err = run_file(text)
    assert code in (0, 2), f"exit {code}:\n{err}"
    if code == 2:
        assert err.startswith("simsrv: error: ") and err.count("\n") == 1, err
        assert out == ""
    else:
        assert out.startswith("{") and '"frames"' in out


def test_the_generated_text_is_the_drawn_scenario():
    raw = {"run": {"seed": 3, "duration_s": float("inf")}, "map": {"base_params": {"a": [1.5]}}}
    assert tomllib.loads(to_toml(raw)) == raw


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenario_files())
def test_generated_scenarios_run_or_are_one_line_errors(scenario):
    check(scenario[0])


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(scenario_files(max_fields=8))
def test_generated_scenarios_run_or_are_one_line_errors_long(scenario):
    check(scenario[0])


@settings(max_examples=400, deadline=None, derandomize=True)
@given(data=st.data(), field=st.sampled_from(FIELDS))
def test_every_field_refuses_its_invalid_values_naming_it(data, field):
    """Schema level, no run: each field's invalid values are an error that names the field;
    its valid values load or fail only on a bound between fields (jitter < 1/rate, ...)."""
    valid, invalid = values(field)
    value = toml_value(data.draw(invalid, label="invalid"))
    with pytest.raises(InputError) as caught:
        load_scenario(None, [*field.context, f"{field.key}={value}"])
    message = str(caught.value)
    assert message.startswith((f"{field.key}: ", f"{field.key}.")), message  # .0: list items
    assert "\n" not in message
    value = toml_value(data.draw(valid, label="valid"))
    try:
        load_scenario(None, [*field.context, f"{field.key}={value}"])
    except InputError as error:  # a bound between fields (jitter < 1/rate, door < room, ...)
        assert "Input should be" not in str(error), str(error)
