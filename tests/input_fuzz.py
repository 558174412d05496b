"""simsrv's own fuzzer: hostile inputs as hypothesis strategies, and the verdict on each.

A *case* is one thing a user (or a script, or another tool) may throw at simsrv:

``scenario``  a scenario file generated from the schema (:mod:`tests.scenario_fuzz`)
``text``      a shipped scenario's TOML text, mutated (lines dropped, doubled or cut, values
              replaced by hostile ones, bytes flipped, keys with line breaks...)
``bsp``       a small, fully known BSP map (:mod:`tests.bsp_builder`) with bytes flipped,
              integers overwritten, cut short, or gzip-wrapped
``sweep``     a sweep file (seeds, ``[set]``, ``[grid]``, ``[zip]``, ``[capacity]``) with valid
              and hostile values, run by ``simsrv sweep`` or ``simsrv capacity --sweep``
``argv``      a subcommand with one of its flags given a hostile value
``api``       a call of the Python API (``run``, ``load_scenario``, ``Scenario``,
              ``KeepWindow``) with wrong arguments or a scenario changed after loading
``testbed``   ``simsrv testbed`` with one of its flags given a hostile value, pointed at a
              shared folder that is not there (a condition that passes every check is then
              refused for the folder: no real server starts)
``campaign``  a testbed campaign file (``[[run]]`` rows) with fields dropped, doubled or given
              hostile values, run by ``simsrv testbed --campaign`` (no server either)
``stored``    a testbed campaign's store (written by the campaign's own writer, made-up
              measurements) damaged: bytes flipped in any file, a column of ``runs.parquet``
              dropped or given hostile values, ``capacity.json`` garbage, the checksums
              removed; read by ``simsrv testbed --compare`` or ``simsrv calibrate --data``
``store``     a finished sweep's store damaged as a crash, a disk or a user may leave it (a
              byte flipped anywhere in a file, a file cut short or removed, a part replaced by
              a directory or a FIFO), then the sweep resumed: it must end with every run stored
              with the values of the undamaged store, or refuse in one line

:func:`verdict` runs a case in this process and classifies what happened.  The promise is:
exit 0 (or the API returns), or exit 2 with one line (``InputError`` of one line) within
:data:`REFUSAL_LIMIT_S`, or, for a valid long run, a Ctrl-C (simulated after the case's budget)
that stops it with one line.  Anything else is a failure: a traceback (an exception other than
``InputError`` escaping), another exit status, a multi-line or slow refusal, a result lost or
changed (a case's own ``check`` after it ran), or a run that ignores Ctrl-C (caught by the
campaign's watchdog, ``benchmarks/fuzz_campaign.py``).
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import os
import random
import signal
import struct
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from simsrv.core.errors import InputError
from tests.scenario_fuzz import BASE, FIELDS, scenario_files, to_toml, toml_value, values

ROOT = Path(__file__).resolve().parents[1]

REFUSAL_LIMIT_S = 5.0
"""A refusal (exit 2) must come within this many seconds."""

RUN_BUDGET_S = 30.0
"""A case still running after this is interrupted (a simulated Ctrl-C)."""

SHORT_RUN = {"duration_s": 0.1, "warmup_s": 0.05}

FAST_SCENARIOS = [
    "cube-160.toml",
    "cordeiro2007/fork-wait.toml",
    "cordeiro2007/clone-nowait-cube.toml",
    "cordeiro2007/sequential-bwcontrol.toml",
    "abdelkhalek2004/threads8-region.toml",
    "abdelkhalek2004/thread-per-client.toml",
    "area2004/threads4-optimized.toml",
    "cluster/nodes4-cpus2-640.toml",
]
"""Shipped scenarios the ``text`` family mutates (their runs cut to :data:`SHORT_RUN`)."""

HOSTILE_VALUES = [
    "0",
    "-1",
    "1e308",
    "-1e308",
    "nan",
    "inf",
    "9223372036854775808",
    "-9223372036854775809",
    '""',
    '"' + "x" * 5000 + '"',
    "[]",
    "[" * 200 + "]" * 200,
    "{}",
    "true",
    '"\\u202e\\u0000"',
    '[1, 2.5, "x"]',
    "1979-05-27T07:32:00Z",
]
"""TOML values that are wrong for almost every field."""


@dataclass
class Case:
    """One hostile input: ``argv`` for the command line (``{dir}`` is the case's temporary
    directory, where ``files`` are written first, then ``prepare(dir)`` makes what bytes
    cannot say: a FIFO, a directory), or ``call`` for the Python API.  ``check(dir)``, after
    a case that ran, names a result lost or changed (None: all there)."""

    family: str
    argv: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    call: Callable[[], Any] | None = None
    label: str = ""
    prepare: Callable[[Path], None] | None = None
    check: Callable[[Path], str | None] | None = None

    def describe(self) -> str:
        """The case as JSON, enough to replay it (:func:`replay`): its command or call and
        its files (base64, whole up to 64 KiB; a larger file's first 300 bytes as text)."""
        files = {
            name: {"base64": base64.b64encode(data).decode()}
            if len(data) <= 65536
            else {"head": data[:300].decode("utf-8", "replace"), "bytes": len(data)}
            for name, data in self.files.items()
        }
        return json.dumps(
            {"family": self.family, "argv": self.argv, "call": self.label, "files": files}
        )


@dataclass(frozen=True)
class Verdict:
    """What a case did: ``outcome`` is ``run``, ``refused`` or ``interrupted`` (kept
    promises) or ``traceback``, ``exit``, ``multi-line``, ``slow-refusal``, ``lost``
    (failures)."""

    outcome: str
    seconds: float
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.outcome not in ("run", "refused", "interrupted")


class _Interrupt(KeyboardInterrupt):
    """The simulated Ctrl-C of a case over its budget."""


def verdict(case: Case, budget_s: float = RUN_BUDGET_S) -> Verdict:
    """Run ``case`` here and classify it (see the module docstring)."""

    def ctrl_c(signum, frame):
        raise _Interrupt

    previous = signal.signal(signal.SIGALRM, ctrl_c)
    start = time.perf_counter()
    out, err = io.StringIO(), io.StringIO()
    lost = None
    try:
        with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
            # in the case's directory: a flag value such as `--out -1` writes a file there
            for name, data in case.files.items():
                (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
                (Path(tmp) / name).write_bytes(data)
            if case.prepare is not None:
                case.prepare(Path(tmp))
            signal.setitimer(signal.ITIMER_REAL, budget_s)
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    if case.call is not None:
                        case.call()
                        code = 0
                    else:
                        from simsrv.cli.main import main

                        code = main([arg.replace("{dir}", tmp) for arg in case.argv])
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            lost = case.check(Path(tmp)) if case.check is not None and code == 0 else None
    except _Interrupt:
        return Verdict("interrupted", time.perf_counter() - start)
    except InputError as error:
        code, err = 2, io.StringIO(f"simsrv: error: {error}\n")
    except SystemExit as exit_:  # argparse refuses a flag by exiting
        code = exit_.code if isinstance(exit_.code, int) else 1
    except Exception as error:  # the failure the fuzzer looks for
        return Verdict(
            "traceback", time.perf_counter() - start, f"{type(error).__name__}: {error}"[:500]
        )
    finally:
        signal.signal(signal.SIGALRM, previous)
    seconds = time.perf_counter() - start
    text = err.getvalue()
    if code == 0:
        return Verdict("lost", seconds, lost) if lost else Verdict("run", seconds)
    if code == 130 and text.endswith("simsrv: interrupted\n") and "Traceback" not in text:
        return Verdict("interrupted", seconds)  # after the command's own progress lines
    if code != 2:
        return Verdict("exit", seconds, f"exit {code}: {text[:500]}")
    if not text.startswith("simsrv") or ": error: " not in text or text.count("\n") != 1:
        return Verdict("multi-line", seconds, text[:500])
    if seconds > REFUSAL_LIMIT_S:
        return Verdict("slow-refusal", seconds, text[:300])
    return Verdict("refused", seconds)


def replay(described: str, budget_s: float = RUN_BUDGET_S) -> Verdict:
    """The verdict on a command-line case again, from its :meth:`Case.describe` (e.g. a failed
    case of a campaign's ``campaign.json``)."""
    data = json.loads(described)
    files = {name: base64.b64decode(f["base64"]) for name, f in data["files"].items()}
    return verdict(Case(data["family"], data["argv"], files), budget_s)


# --- the families -------------------------------------------------------------------------


@st.composite
def scenario_cases(draw: st.DrawFn) -> Case:
    text, _ = draw(scenario_files())
    return Case("scenario", ["run", "{dir}/s.toml", "--json"], {"s.toml": text.encode()})


def _short(text: str) -> str:
    """A shipped scenario's text with its run cut to :data:`SHORT_RUN`."""
    lines = []
    for line in text.splitlines():
        key = line.split("=")[0].strip()
        if key in SHORT_RUN:
            line = f"{key} = {SHORT_RUN[key]}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _mutate(lines: list[str], rng: random.Random) -> list[str]:
    lines = list(lines)
    which = rng.randrange(9)
    at = rng.randrange(len(lines)) if lines else 0
    if which == 0 and lines:  # drop a line
        del lines[at]
    elif which == 1 and lines:  # double a line (a duplicate key or table)
        lines.insert(at, lines[at])
    elif which == 2 and lines:  # a value made hostile
        key, sep, _ = lines[at].partition("=")
        if sep:
            lines[at] = f"{key}= {rng.choice(HOSTILE_VALUES)}"
    elif which == 3:  # an unknown or broken key
        key = rng.choice(["nope", "se\\ned", '"a.b"', "a" * 300, "[x]", "players.count"])
        lines.insert(at, f"{key} = {rng.choice(HOSTILE_VALUES)}")
    elif which == 4 and lines:  # a line cut short
        lines[at] = lines[at][: rng.randrange(len(lines[at]) + 1)]
    elif which == 5:  # a table header out of nowhere
        lines.insert(at, rng.choice(["[run]", "[map]", "[map.kind]", "[[players]]", "[cluster]"]))
    elif which == 6 and len(lines) > 1:  # two lines swapped
        other = rng.randrange(len(lines))
        lines[at], lines[other] = lines[other], lines[at]
    elif which == 7 and lines:  # a control character or a line break inside a line
        cut = rng.randrange(len(lines[at]) + 1)
        lines[at] = (
            lines[at][:cut] + rng.choice(["\x00", "\r", "\x1b", "\u2028", "\n"]) + lines[at][cut:]
        )
    else:  # a valid but extreme value for a field of the schema
        chosen = rng.choice(FIELDS)
        table, _, name = chosen.key.rpartition(".")
        lines += [f"[{table}]", f"{name} = {rng.choice(HOSTILE_VALUES)}"]
    return lines


@st.composite
def text_cases(draw: st.DrawFn) -> Case:
    name = draw(st.sampled_from(FAST_SCENARIOS))
    rng = random.Random(draw(st.integers(0, 2**32)))
    lines = _short((ROOT / "scenarios" / name).read_text()).splitlines()
    for _ in range(draw(st.integers(1, 3))):
        lines = _mutate(lines, rng)
    data = "\n".join(lines).encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:  # raw bytes: not UTF-8 any more
        data = bytearray(data)
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        data = bytes(data)
    path = (ROOT / "scenarios" / name).parent
    # file paths inside the scenario are relative to the working directory
    argv = ["run", "{dir}/s.toml", "--json"]
    return Case("text", argv, {"s.toml": data}, label=str(path.relative_to(ROOT)))


def _box_map() -> bytes:
    from tests.bsp_builder import box_map_bsp

    return box_map_bsp()


@st.composite
def bsp_cases(draw: st.DrawFn) -> Case:
    data = bytearray(_box_map())
    rng = random.Random(draw(st.integers(0, 2**32)))
    for _ in range(draw(st.integers(1, 4))):
        which = rng.randrange(4)
        word = 4 * rng.randrange(max(1, len(data) // 4))  # a 4-byte-aligned offset
        if which == 0:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif which == 1 and word + 4 <= len(data):  # an int32 (count, offset, index) made wild
            value = rng.choice([-1, -(2**31), 2**31 - 1, 10**9, 65535, len(data)])
            struct.pack_into("<i", data, word, value)
        elif which == 2:  # cut short
            del data[rng.randrange(len(data)) :]
            data = data or bytearray(b"\x00")
        elif len(data) >= 4 * 31:  # a header entry (version, lump offset or length)
            value = rng.choice([0, -1, 2**31 - 1, 29, 30])
            struct.pack_into("<i", data, 4 * rng.randrange(31), value)
    raw = bytes(data)
    name = "m.bsp"
    if draw(st.booleans()):
        name = "m.bsp.gz"
        raw = gzip.compress(raw)
        if draw(st.booleans()):  # a broken gzip stream
            raw = raw[: rng.randrange(len(raw))]
    argv = ["run", "--set", "map.kind=bsp", "--set", f"map.file={{dir}}/{name}"]
    argv += [
        arg
        for item in ("players.count=8", "run.duration_s=0.1", "run.warmup_s=0.05")
        for arg in ("--set", item)
    ]
    return Case("bsp", argv, {name: raw})


def _small_base() -> bytes:
    raw = json.loads(json.dumps(BASE))
    raw["run"] = dict(SHORT_RUN)
    return to_toml(raw).encode()


@st.composite
def sweep_cases(draw: st.DrawFn) -> Case:
    lines = ['base = "base.toml"']
    seeds = draw(
        st.one_of(
            st.integers(1, 2),
            st.sampled_from(["0", "-1", "9223372036854775808", "1.5", '"two"', "[]"]),
        )
    )
    lines.append(f"seeds = {seeds}")
    tables: dict[str, list[str]] = {}
    for table in draw(st.lists(st.sampled_from(["set", "grid", "zip"]), max_size=2, unique=True)):
        entries = []
        for chosen in draw(
            st.lists(st.sampled_from(FIELDS), min_size=1, max_size=2, unique_by=lambda f: f.key)
        ):
            valid, invalid = values(chosen)
            pick = st.one_of(valid, invalid) if draw(st.booleans()) else valid
            if table == "set":
                value = toml_value(draw(pick))
            else:
                value = toml_value(draw(st.lists(pick, min_size=0, max_size=2)))
            entries.append(f'"{chosen.key}" = {value}')
        tables[table] = entries
    capacity = draw(st.booleans())
    if capacity:
        start = draw(st.sampled_from(["8", "32", "0", "-4", "1e9", '"x"']))
        most = draw(st.sampled_from(["16", "64", "8", "0", "nan"]))
        tables["capacity"] = [f"start = {start}", f"max = {most}"]
    for table, entries in tables.items():
        lines += [f"[{table}]", *entries]
    files = {"w.toml": ("\n".join(lines) + "\n").encode(), "base.toml": _small_base()}
    if capacity:
        argv = ["capacity", "--sweep", "{dir}/w.toml", "--out", "{dir}/out"]
    else:
        argv = ["sweep", "{dir}/w.toml", "--out", "{dir}/out", "--workers", "1"]
    return Case("sweep", argv, files)


FLAG_VALUES = [
    "-1",
    "0",
    "nan",
    "inf",
    "1e309",
    "",
    "x",
    "{dir}/missing.toml",
    "{dir}",
    "\n",
    "9" * 40,
]

COMMAND_FLAGS = {
    "run": ["--set", "--trace"],
    "map": ["--set", "--out", "--export", "--graph", "--time", "--frames", "--step"],
    "capacity": [
        "--start",
        "--step",
        "--max",
        "--min-reply-ratio",
        "--max-response-ms",
        "--quantile",
        "--search",
        "--sweep",
        "--workers",
    ],
    "compare": ["--strategies", "--cpus", "--clients", "--seeds", "--duration-s", "--workers"],
    "sweep": ["--workers", "--backend", "--out", "--scheduler"],
    "pingpong": ["--out"],
    "validate": ["--seeds", "--only", "--workers"],
}


@st.composite
def argv_cases(draw: st.DrawFn) -> Case:
    command = draw(st.sampled_from(sorted(COMMAND_FLAGS)))
    flag = draw(st.sampled_from(COMMAND_FLAGS[command]))
    value = draw(st.sampled_from(FLAG_VALUES))
    argv = [command]
    if command in ("run", "map", "capacity", "compare"):
        argv.append("{dir}/base.toml")
    if command == "sweep":
        argv.append("{dir}/missing-sweep.toml")
    argv += [flag, value]
    if command in ("run", "capacity", "compare"):
        argv += ["--set", "run.duration_s=0.1", "--set", "run.warmup_s=0.05"]
    return Case("argv", argv, {"base.toml": _small_base()})


def _api_calls() -> list[tuple[str, Callable[..., Any]]]:
    from simsrv import KeepWindow, Scenario, load_scenario, run

    def changed(section: str, name: str, value: Any) -> Any:
        scenario = load_scenario(None, [f"run.{k}={v}" for k, v in SHORT_RUN.items()])
        update = getattr(scenario, section).model_copy(update={name: value})
        return run(scenario.model_copy(update={section: update}))

    return [
        ("run", run),
        ("load_scenario", load_scenario),
        ("Scenario", lambda value: Scenario(run=value)),
        ("Scenario.model_validate", Scenario.model_validate),
        ("KeepWindow", lambda value: KeepWindow(frames=value)),
        ("KeepWindow.start", lambda value: KeepWindow(start_s=value)),
        ("changed", changed),
    ]


API_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.sampled_from(["run", "map", "players", "x"]), st.integers(), max_size=3),
)


@st.composite
def api_cases(draw: st.DrawFn) -> Case:
    calls = _api_calls()
    name, function = draw(st.sampled_from(calls))
    if name == "changed":
        chosen = draw(
            st.sampled_from(
                [f for f in FIELDS if not f.context and "." in f.key and f.key.count(".") == 1]
            )
        )
        section, attribute = chosen.key.split(".")
        valid, invalid = values(chosen)
        value = draw(st.one_of(valid, invalid, API_VALUES))
        return Case(
            "api", call=lambda: function(section, attribute, value), label=f"{chosen.key}={value!r}"
        )
    value = draw(API_VALUES)
    return Case("api", call=lambda: function(value), label=f"{name}({value!r})")


TESTBED_FLAG_VALUES = [
    *FLAG_VALUES,
    "1e-300",
    "hosts:0",
    "hosts:\u00b2",
    "/dev/null",
    "/tmp/x",
    "dm1.bsp",
    "../dm1",
    "all",
    "27600.5",
    "1000000",
    "step",
    "true",
]
TESTBED_FLAGS = [
    "--clients", "--clients-impl", "--map", "--rate-hz", "--phases", "--duration-s",
    "--warmup-s", "--seed", "--quota-us", "--period-us", "--port", "--server", "--threads",
    "--frame-s", "--omp-wait", "--server-cpu", "--client-cpu", "--out", "--campaign",
    "--compare", "--platform", "--seeds",
]  # fmt: skip


@st.composite
def testbed_cases(draw: st.DrawFn) -> Case:
    argv = ["testbed", "--shared", "{dir}/no-shared", "--duration-s", "1"]
    for _ in range(draw(st.integers(1, 2))):
        argv += [draw(st.sampled_from(TESTBED_FLAGS)), draw(st.sampled_from(TESTBED_FLAG_VALUES))]
    return Case("testbed", argv)


CAMPAIGN_FIELDS = {
    "clients": ["2", "16", "0", "-1", "2.0", "257", '"8"', "true"],
    "map": ['"dm1"', '"dm3"', '""', '"/tmp/x"', '"../dm1"', "5", "true", '"dm1.bsp"'],
    "rate_hz": ["77", "20.5", "0", "1e-300", "1e9", "true", '"77"', "nan"],
    "phases": ['"step"', '"independent"', '"hosts:4"', '"hosts:0"', '"hosts:\u00b2"', "5"],
    "duration_s": ["1.0", "0.5", "0", "-1", "1e6", "inf", '"20"'],
    "warmup_s": ["0", "2", "-1", "1e9"],
    "seed": ["1", "0", "-1", "4294967296", '"x"', "1.5"],
    "port": ["27600", "27600.5", "80", "70000", "true"],
    "server_cpu": ["1", "1.0", "-1", '"all"', "99999"],
    "client_cpu": ["0", "99", "-1"],
    "server": ['"mvdsv"', '"quaketm-fine"', '"apache"', "1"],
    "threads": ["1", "2", "0", "9", "2.0"],
    "role": ['"calibration"', '"prediction"', '"fit"', "1"],
    "question": ['"q"', '""', "1"],
    "bogus": ["1"],
}


@st.composite
def campaign_cases(draw: st.DrawFn) -> Case:
    rows = []
    for _ in range(draw(st.integers(1, 3))):
        names = draw(st.lists(st.sampled_from(sorted(CAMPAIGN_FIELDS)), max_size=4, unique=True))
        lines = ["[[run]]", "clients = 2"] if "clients" not in names else ["[[run]]"]
        lines += [f"{name} = {draw(st.sampled_from(CAMPAIGN_FIELDS[name]))}" for name in names]
        rows.append("\n".join(lines))
    text = "\n".join(rows) + "\n"
    if draw(st.integers(0, 9)) == 0:  # the file itself broken
        text = draw(st.sampled_from(["run = 5\n", "[run]\nclients = 2\n", "run = []\n", text[:-3]]))
    argv = ["testbed", "--campaign", "{dir}/c.toml", "--out", "{dir}/out"]
    return Case("campaign", argv + ["--shared", "{dir}/no-shared"], {"c.toml": text.encode()})


_TESTBED_STORE: dict[str, bytes] = {}
"""A campaign store of made-up runs (two calibration conditions and a prediction, with their
checksums), its files by path relative to the case's directory; made once per process."""


def _testbed_store() -> dict[str, bytes]:
    if not _TESTBED_STORE:
        from tests.test_testbed_inputs import base, make_store

        with tempfile.TemporaryDirectory() as tmp:
            configs = [base(clients=8), base(clients=16), base(clients=16, phases="step")]
            make_store(Path(tmp) / "store", configs, ["calibration", "calibration", "prediction"])
            for path in sorted(Path(tmp).rglob("*")):
                if path.is_file():
                    _TESTBED_STORE[str(path.relative_to(tmp))] = path.read_bytes()
    return _TESTBED_STORE


RUNS_COLUMNS = ["label", "role", "config.map", "config.clients", "config.rate_hz",
                "config.duration_s", "config.phases", "frames_per_s", "reply_ratio",
                "server_cpu_utilization"]  # fmt: skip
RUNS_VALUES = [0, -1, 1e300, float("nan"), float("inf"), "x", "hosts:0", 1000000, None, True]


def _rewritten_runs(data: bytes, rng: random.Random) -> bytes:
    """``runs.parquet`` with a column dropped or one of its cells made hostile."""
    import pandas as pd

    table = pd.read_parquet(io.BytesIO(data))
    column = rng.choice([c for c in RUNS_COLUMNS if c in table.columns] or list(table.columns))
    if rng.random() < 0.4:
        table = table.drop(columns=[column])
    else:
        table[column] = table[column].astype(object)
        table.loc[rng.randrange(len(table)), column] = rng.choice(RUNS_VALUES)
        with contextlib.suppress(Exception):  # pyarrow refuses a mixed column: keep it as text
            return _parquet(table)
        table[column] = table[column].astype(str)
    return _parquet(table)


def _parquet(table: Any) -> bytes:
    buffer = io.BytesIO()
    table.to_parquet(buffer, index=False)
    return buffer.getvalue()


@st.composite
def stored_cases(draw: st.DrawFn) -> Case:
    files = dict(_testbed_store())
    rng = random.Random(draw(st.integers(0, 2**32)))
    names = sorted(files)
    for _ in range(draw(st.integers(1, 2))):
        which = rng.randrange(6)
        name = rng.choice(names)
        if which <= 1:  # a flipped bit anywhere
            data = bytearray(files[name])
            if data:
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            files[name] = bytes(data)
        elif which == 2:  # cut short
            files[name] = files[name][: rng.randrange(len(files[name]) + 1)]
        elif which == 3:  # runs.parquet rewritten (its checksum then fails, unless removed)
            files["store/runs.parquet"] = _rewritten_runs(files["store/runs.parquet"], rng)
            if rng.random() < 0.7:
                files.pop("store/manifest.json", None)
        elif which == 4:  # a garbage capacity file
            files["store/capacity.json"] = rng.choice(
                [b"{", b"[]", b'{"searches": 5}', b"null", b'{"x": {"clients": -1}}']
            )
            files.pop("store/manifest.json", None)
        else:  # the checksums removed (a store written before them)
            for manifest in [n for n in files if n.endswith("manifest.json")]:
                if rng.random() < 0.5:
                    files.pop(manifest)
    if draw(st.booleans()):
        argv = ["testbed", "--compare", "{dir}/store", "--out", "{dir}/cmp", "--seeds", "1"]
    else:
        platform = draw(st.sampled_from(["this-machine-mvdsv", "this-machine-quaketm"]))
        argv = ["calibrate", platform, "--data", "{dir}/store", "--out", "{dir}/p.toml"]
    return Case("stored", argv, files)


_STORE_TEMPLATE: dict[str, Any] = {}
"""The finished store of a small sweep (made once per process): its files by path relative
to the case's directory, and its rows without the columns that vary between runs."""

STORE_SWEEP = 'base = "base.toml"\nseeds = 2\n[grid]\n"players.count" = [4, 8]\n'


def _store_rows(out: Path) -> Any:
    from simsrv.sweep.records import VOLATILE
    from simsrv.sweep.store import SweepStore

    rows = SweepStore(out).read()
    rows = rows.drop(columns=[c for c in VOLATILE if c in rows.columns])
    return rows.sort_values("scenario_hash").reset_index(drop=True)


def _store_template() -> dict[str, Any]:
    if not _STORE_TEMPLATE:
        from simsrv.cli.main import main

        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            files = {"base.toml": _small_base(), "w.toml": STORE_SWEEP.encode()}
            for name, data in files.items():
                (root / name).write_bytes(data)
            argv = ["sweep", str(root / "w.toml"), "--out", str(root / "out"), "--workers", "1"]
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                assert main(argv) == 0
            for path in sorted((root / "out").rglob("*")):
                if path.is_file() and path.name != ".simsrv.lock":
                    files[str(path.relative_to(root))] = path.read_bytes()
            _STORE_TEMPLATE.update(files=files, rows=_store_rows(root / "out"))
    return _STORE_TEMPLATE


def _same_runs(tmp: Path) -> str | None:
    """None when the resumed store holds every run of the template with its values."""
    expected = _store_template()["rows"]
    try:
        rows = _store_rows(tmp / "out")
    except Exception as error:  # a store its own reader cannot read is a lost result
        return f"store unreadable after the resume: {type(error).__name__}: {error}"[:300]
    if (
        len(rows) != len(expected)
        or rows["scenario_hash"].tolist() != expected["scenario_hash"].tolist()
    ):
        return f"{len(rows)} of {len(expected)} runs stored after the resume"
    columns = [c for c in expected.columns if c in rows.columns]
    if not rows[columns].equals(expected[columns]):
        return "a stored run's values changed after the resume"
    return None


@st.composite
def store_cases(draw: st.DrawFn) -> Case:
    files = dict(_store_template()["files"])
    stored = sorted(name for name in files if name.startswith("out/"))
    rng = random.Random(draw(st.integers(0, 2**32)))
    prepare = None
    for _ in range(draw(st.integers(1, 2))):
        name = rng.choice(stored)
        data = bytearray(files[name])
        which = rng.randrange(6)
        if which <= 1 and data:  # a flipped bit anywhere (footer, page, header)
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif which == 2 and data:  # the footer's bytes: where a crash leaves its mark
            at = len(data) - 1 - rng.randrange(min(64, len(data)))
            data[at] ^= 1 << rng.randrange(8)
        elif which == 3:  # cut short
            del data[rng.randrange(len(data) + 1) :]
        elif which == 4:  # removed
            files.pop(name, None)
            stored = [s for s in stored if s != name] or [next(iter(files))]
            continue
        else:  # a part or run file replaced by a directory or a FIFO of its name
            files.pop(name, None)
            stored = [s for s in stored if s != name] or [next(iter(files))]
            kind = rng.choice(["dir", "fifo"])

            def prepare(root: Path, name: str = name, kind: str = kind) -> None:
                path = root / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.mkdir() if kind == "dir" else os.mkfifo(path)

            continue
        files[name] = bytes(data)
    argv = ["sweep", "{dir}/w.toml", "--out", "{dir}/out", "--workers", "1"]
    return Case("store", argv, files, prepare=prepare, check=_same_runs)


FAMILIES: dict[str, Callable[[], st.SearchStrategy[Case]]] = {
    "scenario": scenario_cases,
    "text": text_cases,
    "bsp": bsp_cases,
    "sweep": sweep_cases,
    "argv": argv_cases,
    "api": api_cases,
    "store": store_cases,
    "testbed": testbed_cases,
    "campaign": campaign_cases,
    "stored": stored_cases,
}

WEIGHTS = {
    "scenario": 26, "text": 21, "bsp": 12, "sweep": 4, "argv": 8, "api": 12, "store": 3,
    "testbed": 6, "campaign": 5, "stored": 3,
}  # fmt: skip
"""Share of each family in a campaign, percent."""


def cases(families: list[str] | None = None) -> st.SearchStrategy[Case]:
    """Cases of ``families`` (default all), in the proportions of :data:`WEIGHTS`."""
    names = families or list(FAMILIES)
    weighted = [name for name in names for _ in range(WEIGHTS[name])]
    return st.sampled_from(weighted).flatmap(lambda name: FAMILIES[name]())
