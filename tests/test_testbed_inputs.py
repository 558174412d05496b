"""The testbed's files and flags held to the one-line promise (no real server needed).

Campaign files, flags, stored campaigns (``--compare DIR``, ``calibrate --data DIR``) and
resuming a damaged store: bad input is one line on stderr naming the file and the field,
exit status 2, no traceback, nothing started; a damaged stored run is moved aside and
measured again; Ctrl-C on a comparison is status 130, one line, no process left.  The
stores here are synthetic (written by the campaign's own writer, with made-up
measurements); the real server is replaced by a fake where a campaign has to measure.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simsrv.testbed.campaign as campaign_module
from simsrv.cli.main import main
from simsrv.core.errors import InputError
from simsrv.testbed.build import default_shared_root, missing_build_tools
from simsrv.testbed.campaign import Campaign, Condition, gather, load_campaign, run_campaign
from simsrv.testbed.quaketm_campaign import quaketm_campaign
from simsrv.testbed.run import TestbedConfig
from simsrv.testbed.store import read_runs, write_run, write_store

SHARED = default_shared_root()
HAS_MAPS = (SHARED / "maps" / "quake-gpl" / "dm1.bsp.gz").is_file() and (
    SHARED / "qw-testbed" / "qwprogs.dat"
).is_file()
needs_maps = pytest.mark.skipif(not HAS_MAPS, reason=f"no GPL maps and progs under {SHARED}")
MACHINE = {"cpu_model": "test CPU", "kernel": "6.0", "clocksource": "tsc", "cpus": "2"}


# -- helpers ------------------------------------------------------------------------------


def refused(capsys, argv: list[str], *fragments: str) -> str:
    """``simsrv ARGV`` in this process: status 2, one line on stderr holding every fragment,
    no traceback (an exception other than the refusal would fail the test here)."""
    try:
        status = main(argv)
    except SystemExit as stop:  # argparse's refusal of a flag
        status = stop.code
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err
    return err


def cli(*args: str, timeout: float = 60, **options) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "simsrv", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        **options,
    )


@pytest.fixture
def no_server(monkeypatch):
    """A campaign that reaches the real server fails the test."""

    def started(*args, **kwargs):
        raise AssertionError("a server was started")

    monkeypatch.setattr(campaign_module, "run_testbed", started)


class FakeResult:
    """A measured run as the campaign stores it, with made-up measurements."""

    def __init__(self, config: TestbedConfig, **measured):
        self.config = config
        self.summary = summary_of(config, **measured)

    def write(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        frames_table(self.config).to_parquet(out / "frames.parquet", index=False)
        pd.DataFrame({"client": range(self.config.clients)}).to_parquet(
            out / "clients.parquet", index=False
        )
        sends_table(self.config).to_parquet(out / "sends.parquet", index=False)
        (out / "summary.json").write_text(json.dumps(self.summary, indent=2) + "\n")


def summary_of(config: TestbedConfig, **measured) -> dict:
    quaketm = config.quaketm is not None
    summary = {
        "kind": "testbed",
        "config": asdict(config),
        "label": config.label,
        "frames_per_s": 300.0 + config.clients,
        "messages_per_frame": 1.02,
        "messages_per_s": 77.0 * config.clients,
        "replies_per_s": 77.0 * config.clients,
        "reply_ratio": 1.0,
        "server_cpu_utilization": 0.01 * config.clients,
        "quota_share": None,
        "cpu_share": {
            "world": 0.03,
            "net_recv": 0.05,
            "request": 0.2,
            "reply": 0.12,
            "net_send": 0.25,
            "frame": 0.35,
        },  # fmt: skip
        "burst_width_ms": 0.0,
        "send_lateness_ms": 0.01,
        "socket_buffer_packets": 256,
        "client_window_cpu_share": 0.1,
        "edicts_per_reply": 90.0,
        "machine": MACHINE,
        "load_generator_warning": None,
    }
    if quaketm:
        summary.update(
            {
                "frame_compute_ms": {"mean": 1.0},
                "request": {
                    "wall_ms_per_frame": 0.5,
                    "lock_wait_share": 0.0,
                    "wake_share": 0.01,
                    "idle_end_share": 0.0,
                },
            }  # fmt: skip
        )
    summary.update(measured)
    return summary


def frames_table(config: TestbedConfig, n: int = 400) -> pd.DataFrame:
    """A frame table of the patched server: frames 2.5 ms apart, one packet and one reply
    each, a world tick every fifth."""
    rng = np.random.default_rng(config.clients)
    start = 1000.0 + np.arange(n) * 2.5e-3
    us = lambda low, high: rng.uniform(low, high, n)  # noqa: E731
    table = {
        "frame": np.arange(n), "start_s": start, "wall_us": us(20, 60), "cpu_us": us(20, 50),
        "read_us": us(5, 10), "recv_syscall_us": us(1, 2), "execute_us": us(4, 8),
        "physics_us": us(5, 20), "send_us": us(5, 10), "send_syscall_us": us(3, 5),
        "build_us": us(2, 5), "other_us": us(2, 4), "select_us": us(1, 2),
        "packets": np.ones(n, np.int64), "moves": np.ones(n, np.int64),
        "commands": np.ones(n, np.int64), "connectionless": np.zeros(n, np.int64),
        "replies": np.ones(n, np.int64), "chokes": np.zeros(n, np.int64),
        "active_clients": np.full(n, config.clients), "physics_ran": (np.arange(n) % 5 == 0),
        "edicts": np.full(n, 90), "measured": np.ones(n, bool),
        "group_us": us(0, 1), "request_work_cpu_us": us(3, 6),
    }  # fmt: skip
    table["physics_ran"] = table["physics_ran"].astype(np.int64)
    return pd.DataFrame(table)


def sends_table(config: TestbedConfig, ticks: int = 20) -> pd.DataFrame:
    period = 1.0 / config.rate_hz
    client, tick = np.meshgrid(np.arange(config.clients), np.arange(ticks), indexing="ij")
    due = 1000.0 + client * period / config.clients + tick * period
    return pd.DataFrame(
        {
            "client": client.ravel(),
            "tick": tick.ravel(),
            "due_s": due.ravel(),
            "sent_s": due.ravel() + 1e-5,
        }
    )


def base(**changes) -> TestbedConfig:
    """The standard campaign's condition (short labels), changed."""
    return replace(TestbedConfig(duration_s=10.0), **changes)


def make_store(
    out: Path,
    configs: list[TestbedConfig],
    roles: list[str] | None = None,
    capacity: dict | None = None,
) -> Path:
    """A campaign store as ``run_campaign`` writes it, of made-up runs of ``configs``."""
    roles = roles or ["calibration"] * len(configs)
    rows = []
    (out / "runs").mkdir(parents=True, exist_ok=True)
    for config, role in zip(configs, roles, strict=True):
        result = FakeResult(config)
        write_run(out / "runs" / config.label, result)
        rows.append({**result.summary, "role": role, "question": "test"})
    write_store(out, gather(rows), capacity)
    return out


def legacy(store: Path) -> Path:
    """The store as a campaign wrote it before the checksums: no manifests."""
    for manifest in store.rglob("manifest.json"):
        manifest.unlink()
    return store


def rewrite_runs(store: Path, change) -> Path:
    """``runs.parquet`` changed by ``change(table)`` (the store's manifest removed)."""
    table = pd.read_parquet(store / "runs.parquet")
    out = change(table)
    (table if out is None else out).to_parquet(store / "runs.parquet", index=False)
    (store / "manifest.json").unlink(missing_ok=True)
    return store


def flip_byte(path: Path, at: int | None = None) -> None:
    data = bytearray(path.read_bytes())
    i = len(data) // 2 if at is None else at
    data[i] ^= 0xFF
    path.write_bytes(bytes(data))


# -- campaign files -----------------------------------------------------------------------


CAMPAIGN_ROWS = [
    ('seed = "x"', "run.0.seed: must be a number, not a string"),
    ("seed = -1", "run.0.seed: Input should be greater than or equal to 0"),
    ("port = 27600.5", "run.0.port: must be a whole number, not a float"),
    ("server_cpu = 1.0", "run.0.server_cpu: must be a whole number, not a float"),
    ("phases = 5", "run.0.phases: Input should be a valid string"),
    ('phases = "hosts:²"', "run.0.phases: hosts:H needs a whole number H in [1, 256]"),
    ('phases = "hosts:0"', "run.0.phases: hosts:H needs a whole number H in [1, 256]"),
    ("map = 5", "run.0.map: Input should be a valid string"),
    ('map = ""', "run.0.map: String should have at least 1 character"),
    ("map = true", "run.0.map: Input should be a valid string"),
    ('map = "/tmp/x"', "run.0.map: must be a map name (letters, digits, _), not a path"),
    ('map = "../dm1"', "run.0.map: must be a map name"),
    ("rate_hz = true", "run.0.rate_hz: must be a number, not a boolean"),
    ("rate_hz = 1e-300", "run.0.rate_hz: Input should be greater than or equal to 1"),
    ("bind = 1", "run.0.bind: must be true or false"),
    ("clients = 2.0", "run.0.clients: must be a whole number, not a float"),
    ("duration_s = 1e6", "run.0.duration_s: Input should be less than or equal to 3600"),
    ("threads = 2", "run.0.threads: applies to QuakeTM"),
    ("period_us = 5000", "run.0.period_us: applies with --quota-us"),
    ('role = "fit"', "run.0.role: Input should be 'calibration' or 'prediction'"),
    ("client = 4", "run.0.client: unknown field; allowed fields: bind, client_cpu"),
    ("client_cpu = 99", "run.0: testbed --client-cpu must be one of this process's CPUs"),
]


@pytest.mark.parametrize("line, message", CAMPAIGN_ROWS)
def test_a_campaign_row_is_refused_in_one_line_before_any_server(
    capsys, tmp_path, no_server, line, message
):
    path = tmp_path / "c.toml"
    clients = "" if line.startswith("clients") else "clients = 2\n"
    path.write_text(f"[[run]]\n{clients}{line}\n")
    refused(
        capsys,
        ["testbed", "--campaign", str(path), "--out", str(tmp_path / "out")],
        f"simsrv: error: testbed --campaign {path}: {message}",
    )
    assert not (tmp_path / "out").exists()  # refused before the store is made


@pytest.mark.parametrize(
    "text, message",
    [
        ("run = 5", "run: Input should be a valid list"),
        ("[run]\nclients = 2", "run: Input should be a valid list"),
        ("title = 1", "run: required field is missing"),
        ("run = []", "run: List should have at least 1 item"),
        ("run = [5]", "run.0: Input should be a valid dictionary"),
        ("[[run]]\nclients =", "not valid TOML"),
    ],
)
def test_a_campaign_file_is_refused_in_one_line(capsys, tmp_path, no_server, text, message):
    path = tmp_path / "c.toml"
    path.write_text(text + "\n")
    refused(capsys, ["testbed", "--campaign", str(path), "--out", str(tmp_path)], message)


def test_two_rows_of_one_condition_are_refused(capsys, tmp_path, no_server):
    path = tmp_path / "c.toml"
    path.write_text(
        '[[run]]\nclients = 2\n[[run]]\nclients = 2\nrole = "calibration"\nquestion = "q"\n'
    )
    refused(
        capsys,
        ["testbed", "--campaign", str(path), "--out", str(tmp_path / "out")],
        "run.1 is the condition of run.0 (dm1-n2-77hz-independent-d20s-s1)",
    )


def test_a_campaign_file_refused_by_the_command_line_is_one_line_within_5_s(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[[run]]\nclients = 2\nseed = "x"\n')
    start = time.monotonic()
    out = cli("testbed", "--campaign", str(path), "--out", str(tmp_path / "o"), timeout=30)
    assert time.monotonic() - start < 5.0
    assert out.returncode == 2
    assert out.stderr.splitlines() == [
        f"simsrv: error: testbed --campaign {path}: run.0.seed: must be a number, not a "
        'string, got "x"'
    ]


# -- labels -------------------------------------------------------------------------------


def test_the_label_names_every_field_of_the_condition():
    """Two conditions that differ in any one field have different labels (a campaign stores a
    run under its label)."""
    one = base()
    variants = [
        one, replace(one, clients=17), replace(one, map="dm2"), replace(one, rate_hz=77.5),
        replace(one, rate_hz=77.000001), replace(one, phases="step"),
        replace(one, phases="hosts:4"), replace(one, duration_s=1.0),
        replace(one, duration_s=0.5), replace(one, warmup_s=0.0), replace(one, seed=2),
        replace(one, quota_us=1000, period_us=20_000),
        replace(one, quota_us=1000, period_us=100_000), replace(one, quota_us=2000,
        period_us=20_000), replace(one, port=27601), replace(one, server_cpu=0),
        replace(one, server_cpu=None), replace(one, client_cpu=1),
        replace(one, clients_impl="python"),
    ]  # fmt: skip
    tm = TestbedConfig(duration_s=6.0, warmup_s=1.0, port=27620, server="quaketm-fine",
                       server_cpu=None)  # fmt: skip
    variants += [
        tm, replace(tm, threads=2), replace(tm, frame_s=0.02), replace(tm, omp_wait="active"),
        replace(tm, bind=True), replace(tm, server_cpu=1), replace(tm, server="quaketm-global"),
        replace(tm, duration_s=5.0), replace(tm, port=27600),
    ]  # fmt: skip
    labels = [v.label for v in variants]
    assert len(set(labels)) == len(labels), labels
    assert one.label == "dm1-n16-77hz-independent-s1"
    assert replace(one, duration_s=0.5).label == "dm1-n16-77hz-independent-d0.5s-s1"


def test_the_standard_and_quaketm_campaigns_keep_their_labels():
    """Their fields are the labels' base: no field beyond the old ones is named, so stores
    measured before keep resuming under the same labels."""
    from simsrv.testbed.campaign import standard_campaign

    for campaign in (standard_campaign(), quaketm_campaign()):
        for condition in campaign.conditions:
            label = condition.config.label
            assert not any(f"-{tag}" in label for tag in ("d", "w", "port", "ccpu")) or (
                "-dm" in label
            )
            assert "-d1" not in label and "-w" not in label and "-port" not in label
    assert "dm1-n16-77hz-hosts:4-s1" in {c.config.label for c in standard_campaign().conditions}


# -- resuming a campaign ------------------------------------------------------------------


@pytest.fixture
def fake_server(monkeypatch):
    """run_testbed replaced by made-up measurements; the labels measured are recorded."""
    measured: list[str] = []

    def run(config, shared_root=None):
        measured.append(config.label)
        return FakeResult(config, frames_per_s=1000.0 / config.duration_s)

    monkeypatch.setattr(campaign_module, "run_testbed", run)
    return measured


def test_conditions_differing_only_in_duration_keep_their_own_measurement(tmp_path, fake_server):
    path = tmp_path / "c.toml"
    path.write_text(
        "[[run]]\nclients = 2\nduration_s = 1.0\n[[run]]\nclients = 2\nduration_s = 0.5\n"
    )
    table = run_campaign(load_campaign(path), tmp_path / "out", log=lambda line: None)
    assert len(fake_server) == 2
    assert table["config.duration_s"].tolist() == [1.0, 0.5]
    assert table["frames_per_s"].tolist() == [1000.0, 2000.0]
    stored = read_runs(tmp_path / "out", "test")
    assert stored["config.duration_s"].tolist() == [1.0, 0.5]


def test_a_damaged_summary_is_moved_aside_and_measured_again(tmp_path, fake_server):
    campaign = Campaign((Condition(base(clients=2)), Condition(base(clients=3))))
    out = tmp_path / "out"
    run_campaign(campaign, out, log=lambda line: None)
    label = base(clients=2).label
    summary = out / "runs" / label / "summary.json"
    summary.write_text(summary.read_text().replace('"reply_ratio": 1.0', '"reply_ratio": 0.5'))
    lines: list[str] = []
    table = run_campaign(campaign, out, log=lines.append)
    damaged = [line for line in lines if line.startswith("damaged")]
    assert damaged == [
        f"damaged   {label}: summary.json does not match its checksum in manifest.json; "
        f"moved to damaged/{label}, measuring it again"
    ]
    assert fake_server == [label, base(clients=3).label, label]  # measured again, once
    assert (out / "damaged" / label / "summary.json").read_text() == summary.read_text().replace(
        '"reply_ratio": 1.0', '"reply_ratio": 0.5'
    )  # nothing stored is deleted
    assert table.set_index("label").loc[label, "reply_ratio"] == 1.0  # the new measurement
    assert "summary.json does not match" in (out / "damaged" / "reasons.txt").read_text()


@pytest.mark.parametrize("name", ["frames.parquet", "sends.parquet", "manifest.json"])
def test_any_damaged_file_of_a_stored_run_is_measured_again(tmp_path, fake_server, name):
    campaign = Campaign((Condition(base(clients=2)),))
    out = tmp_path / "out"
    run_campaign(campaign, out, log=lambda line: None)
    flip_byte(out / "runs" / base(clients=2).label / name, at=10)
    lines: list[str] = []
    run_campaign(campaign, out, log=lines.append)
    assert len(fake_server) == 2
    assert sum(line.startswith("damaged") for line in lines) == 1, lines


def test_a_run_folder_that_is_a_file_is_moved_aside_and_the_new_run_kept(tmp_path, fake_server):
    config = base(clients=2)
    out = tmp_path / "out"
    (out / "runs").mkdir(parents=True)
    (out / "runs" / config.label).write_text("not a run\n")
    lines: list[str] = []
    table = run_campaign(Campaign((Condition(config),)), out, log=lines.append)
    assert f"damaged   {config.label}: runs/{config.label} is not a directory" in lines[0]
    assert (out / "damaged" / config.label).read_text() == "not a run\n"
    assert (out / "runs" / config.label / "manifest.json").is_file()
    assert len(table) == 1 and fake_server == [config.label]


def test_a_stored_run_of_another_condition_is_not_taken_for_this_one(tmp_path, fake_server):
    """A store written before the labels named the port: the run under the label was
    measured on another port; it is set aside, not reused."""
    config = base(clients=2)
    other = replace(config, port=27650)
    out = tmp_path / "out"
    folder = out / "runs" / config.label
    FakeResult(other).write(folder)
    summary = json.loads((folder / "summary.json").read_text())
    (folder / "summary.json").write_text(json.dumps({**summary, "label": config.label}))
    lines: list[str] = []
    run_campaign(Campaign((Condition(config),)), out, log=lines.append)
    assert "holds another condition (port 27650, not 27600)" in lines[0]
    assert fake_server == [config.label]


def test_a_store_without_checksums_resumes_without_measuring_again(tmp_path, fake_server):
    campaign = Campaign((Condition(base(clients=2)), Condition(base(clients=3))))
    out = tmp_path / "out"
    run_campaign(campaign, out, log=lambda line: None)
    legacy(out)
    lines: list[str] = []
    run_campaign(campaign, out, log=lines.append)
    assert len(fake_server) == 2 and all(line.startswith("stored") for line in lines[:2])
    flip_byte(out / "runs" / base(clients=3).label / "frames.parquet", at=-3)  # its footer
    lines.clear()
    run_campaign(campaign, out, log=lines.append)
    assert "frames.parquet is not a readable Parquet table" in lines[1]
    assert len(fake_server) == 3


def test_a_runs_folder_that_is_a_file_is_refused(capsys, tmp_path, fake_server):
    path = tmp_path / "c.toml"
    path.write_text("[[run]]\nclients = 2\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "runs").write_text("x")
    refused(
        capsys,
        ["testbed", "--campaign", str(path), "--out", str(tmp_path / "out")],
        "runs is not a directory",
    )
    assert fake_server == []


# -- stored campaigns: --compare and calibrate --data -------------------------------------


@pytest.fixture
def store(tmp_path) -> Path:
    """Two calibration conditions (8 and 16 clients) and a prediction, with checksums."""
    configs = [base(clients=8), base(clients=16), base(clients=16, phases="step")]
    return make_store(tmp_path / "store", configs, ["calibration", "calibration", "prediction"])


def compare(store: Path, *extra: str) -> list[str]:
    return ["testbed", "--compare", str(store), "--out", str(store.parent / "cmp"), *extra]


def test_a_damaged_runs_table_is_refused_by_its_checksum(capsys, store):
    flip_byte(store / "runs.parquet")
    refused(
        capsys,
        compare(store),
        f"simsrv: error: {store}/runs.parquet does not match its checksum in manifest.json "
        "(damaged); resume the campaign",
    )


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda p: p.write_bytes(b""), "runs.parquet: not a readable Parquet table"),
        (lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]), "not a readable"),
        (lambda p: p.write_text("garbage"), "not a readable Parquet table"),
    ],
)
def test_an_empty_or_truncated_runs_table_is_refused(capsys, store, damage, message):
    damage(legacy(store) / "runs.parquet")
    refused(capsys, compare(store), message)


def test_byte_flips_in_a_store_without_checksums_never_escape_as_a_traceback(store):
    """Any byte of a runs.parquet flipped: the table reads as it is or one line refuses it."""
    path = legacy(store) / "runs.parquet"
    clean = path.read_bytes()
    outcomes = set()
    for at in range(0, len(clean), max(1, len(clean) // 300)):
        data = bytearray(clean)
        data[at] ^= 0x5A
        path.write_bytes(bytes(data))
        try:
            read_runs(store, "test")
            outcomes.add("read")
        except InputError as error:
            assert "\n" not in str(error) and str(error).startswith(str(path))
            outcomes.add("refused")
    assert "refused" in outcomes


@pytest.mark.parametrize(
    "column", ["label", "role", "question", "config.map", "config.duration_s", "frames_per_s",
               "cpu_share.world", "config.seed"]
)  # fmt: skip
def test_a_missing_column_of_the_runs_table_is_named(capsys, store, column):
    rewrite_runs(store, lambda t: t.drop(columns=column))
    refused(capsys, compare(store), f"{store}/runs.parquet: column {column} is missing")


@pytest.mark.parametrize(
    "column, value, message",
    [
        ("config.phases", "hosts:0", "config.phases: hosts:H needs a whole number H in [1, 256]"),
        ("config.rate_hz", 0.0, "config.rate_hz: Input should be greater than or equal to 1"),
        ("config.clients", 1_000_000, "config.clients: Input should be less than or equal to 256"),
        ("config.duration_s", 1e6, "config.duration_s: Input should be less than or equal to 3600"),
        ("config.map", "/etc/passwd", "config.map: must be a map name"),
        ("config.seed", -1, "config.seed: Input should be greater than or equal to 0"),
        ("config.period_us", 5, "config.period_us: Input should be greater than or equal to 1000"),
        ("label", "../../x", "label does not match its config.* columns"),
        ("role", "fit", "role must be one of calibration, prediction"),
        ("frames_per_s", float("inf"), "frames_per_s must be in [0, 1e+07]"),
        ("cpu_share.world", 2.0, "cpu_share.world must be in [0, 1]"),
        ("frames_per_s", "fast", "column frames_per_s must hold numbers"),
        ("socket_buffer_packets", 1e12, "socket_buffer_packets must be in [1, 1e+07]"),
    ],
)
def test_an_implausible_stored_value_is_refused_naming_the_row_and_field(
    capsys, store, column, value, message
):
    def change(table):
        if isinstance(value, str) and table[column].dtype != object and column != "label":
            table[column] = value  # a column of texts where numbers are stored
            return
        table[column] = table[column].astype(object)
        table.loc[0, column] = value
        table[column] = table[column].infer_objects()

    rewrite_runs(store, change)
    err = refused(capsys, compare(store), f"{store}/runs.parquet: ", message)
    assert "Traceback" not in err


def test_a_stored_1e6_s_condition_is_refused_before_the_model_runs(capsys, store):
    rewrite_runs(store, lambda t: t.assign(**{"config.duration_s": 1e6}))
    refused(capsys, compare(store), "config.duration_s: Input should be less than or equal to 3600")


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "capacity.json: not valid JSON"),
        ("[1, 2]", "capacity.json: must be a JSON object of searches"),
        ('{"searches": 5}', "capacity.json: searches: Input should be a valid list"),
        ('{"searches": [{"name": "x"}]}', "capacity.json: searches.0.capacity_clients: required"),
        ("{" * 100_000, "capacity.json: not valid JSON"),
    ],
)
def test_a_garbage_capacity_file_is_refused_in_one_line(capsys, store, text, message):
    legacy(store)
    (store / "capacity.json").write_text(text)
    refused(capsys, compare(store), message)


def test_a_capacity_search_with_an_implausible_base_is_refused(capsys, tmp_path):
    search = {
        "name": "s", "seed": 1, "capacity_clients": 4, "min_reply_ratio": 0.95,
        "base": {**asdict(base(clients=4)), "duration_s": 1e6}, "clients_grid": [4, 8],
        "clients_tried": [4, 8],
    }  # fmt: skip
    store = make_store(tmp_path / "s", [base(clients=8)], capacity={"searches": [search]})
    refused(
        capsys, compare(store), "capacity.json: searches.0.base.duration_s: Input should be less"
    )


@needs_maps
def test_a_replayed_sends_table_without_its_column_is_named(capsys, store):
    label = base(clients=8).label
    path = store / "runs" / label / "sends.parquet"
    pd.read_parquet(path).drop(columns="sent_s").to_parquet(path, index=False)
    (store / "runs" / label / "manifest.json").unlink()
    refused(capsys, compare(store, "--seeds", "1"), "lacks the column(s) sent_s")


@needs_maps
def test_a_damaged_run_file_is_refused_by_its_checksum(capsys, store):
    label = base(clients=16).label
    flip_byte(store / "runs" / label / "sends.parquet", at=40)
    refused(
        capsys,
        compare(store, "--seeds", "1"),
        f"{store}/runs/{label}/sends.parquet does not match its checksum in manifest.json",
    )


def test_an_unknown_platform_is_refused_before_the_model(capsys, store):
    if not HAS_MAPS:
        pytest.skip(f"no shared folder under {SHARED}")
    refused(capsys, compare(store, "--platform", "nowhere"), "machine.platform: unknown platform")


def calibrate(store: Path, platform: str = "this-machine-mvdsv") -> list[str]:
    return ["calibrate", platform, "--data", str(store), "--out", str(store.parent / "p.toml")]


def test_calibration_refuses_runs_at_one_client_count(capsys, tmp_path):
    store = make_store(tmp_path / "s", [base(clients=16), base(clients=16, seed=2)])
    refused(
        capsys,
        calibrate(store),
        "world_base and world_per_entity cannot be set: every calibration run has 16 clients",
    )
    assert not (tmp_path / "p.toml").exists()


def test_calibration_refuses_a_target_that_was_not_measured(capsys, store):
    rewrite_runs(store, lambda t: t.assign(frames_per_s=[float("nan"), 300.0, 300.0]))
    refused(capsys, calibrate(store), f"{base(clients=8).label}: frames_per_s was not measured")
    assert not (store.parent / "p.toml").exists()


@needs_maps
@pytest.mark.parametrize(
    "change, message",
    [
        (lambda t: t.iloc[:0], "no frame in the measured window"),
        (lambda t: t.assign(measured=False), "no frame in the measured window"),
        (lambda t: t.drop(columns="physics_us"), "frames.parquet: column physics_us is missing"),
        (lambda t: t.assign(physics_us=np.nan), "column physics_us must hold finite numbers"),
        (lambda t: t.assign(packets=-1), "column packets must hold whole numbers >= 0"),
        (lambda t: t.assign(measured=1), "column measured must hold true/false"),
    ],
)
def test_calibration_refuses_a_damaged_frame_table(capsys, store, change, message):
    path = store / "runs" / base(clients=8).label / "frames.parquet"
    change(pd.read_parquet(path)).to_parquet(path, index=False)
    (path.parent / "manifest.json").unlink()
    refused(capsys, calibrate(store), f"{path}", message)
    assert not (store.parent / "p.toml").exists()


@needs_maps
def test_calibration_refuses_frames_that_cannot_pin_the_warm_costs(capsys, store):
    """Frames 2.5 ms apart never follow each other at once: no warm frame to measure on."""
    refused(
        capsys,
        calibrate(store),
        "frame_overhead, net_recv_per_message and request_per_message cannot be set",
    )
    assert not (store.parent / "p.toml").exists()


def test_calibration_refuses_a_store_it_cannot_use(capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    refused(capsys, calibrate(tmp_path / "empty"), "calibrate --data: no runs.parquet in")
    tm = replace(
        quaketm_campaign().conditions[0].config, server="quaketm-fine", threads=2, clients=8
    )
    store = make_store(tmp_path / "tm", [tm, replace(tm, clients=16)])
    refused(capsys, calibrate(store), "holds QuakeTM's runs; calibrate them with simsrv calibrate")


def quaketm_store(tmp_path: Path, clients=(8, 16)) -> Path:
    serial = quaketm_campaign().conditions[0].config
    configs = [replace(serial, clients=n) for n in clients]
    store = make_store(tmp_path / "tm", configs)
    primitives = []
    for quantity, policy, parameters in (
        ("lock_uncontended_ns", "passive", [np.nan]),
        ("barrier_ns", "active", [np.nan]),
        ("lock_handoff_ns", "passive", [1.0, 10.0, 100.0, 1000.0]),
        ("fork_wake_ns", "passive", [0.0, 1000.0, 10_000.0, 100_000.0]),
    ):
        for parameter in parameters:
            value = 1000.0 + (0.0 if np.isnan(parameter) else 20.0 * np.sqrt(parameter))
            primitives.append((quantity, policy, parameter, value, 0))
    pd.DataFrame(
        primitives, columns=["quantity", "policy", "parameter", "value_ns", "repeat"]
    ).to_parquet(store / "primitives.parquet", index=False)
    return store


def test_the_quaketm_calibration_of_a_sound_store_writes_its_platform(tmp_path):
    store = quaketm_store(tmp_path)
    out = cli(*calibrate(store, "this-machine-quaketm"), timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert 'name = "p"' in (tmp_path / "p.toml").read_text()


def test_the_quaketm_calibration_refuses_what_cannot_pin_its_costs(capsys, tmp_path):
    store = quaketm_store(tmp_path, clients=(16,))
    refused(
        capsys,
        calibrate(store, "this-machine-quaketm"),
        "world_base and world_per_entity cannot be set: every serial run has 16 clients",
    )
    store = quaketm_store(tmp_path / "b")
    table = pd.read_parquet(store / "primitives.parquet")
    table[table["quantity"] != "barrier_ns"].to_parquet(store / "primitives.parquet")
    refused(capsys, calibrate(store, "this-machine-quaketm"), "no barrier_ns measured")
    table.assign(value_ns=np.nan).to_parquet(store / "primitives.parquet")
    refused(capsys, calibrate(store, "this-machine-quaketm"), "column value_ns must hold finite")
    assert not (tmp_path / "p.toml").exists() and not (tmp_path / "b" / "p.toml").exists()


# -- flags --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["--rate-hz", "1e-300"], "testbed --rate-hz must be in [1, 1000], got 1e-300"),
        (["--phases", "hosts:²"], "testbed --phases hosts:H needs a whole number H in [1, 256]"),
        (["--phases", "hosts:99999"], "testbed --phases hosts:H needs a whole number H"),
        (["--seed", "-1"], "testbed --seed must be in [0, 4294967295]"),
        (["--quota-us", "1" + "0" * 20], "testbed --quota-us must be <= 1000000000"),
        (["--period-us", "5000"], "testbed --period-us applies with --quota-us"),
        (["--frame-s", "0.05"], "testbed --frame-s applies to QuakeTM"),
        (["--server-cpu", "99999"], "testbed --server-cpu must be in [0, 1023]"),
        (["--port", "80"], "testbed --port must be in [1024, 65535]"),
        (["--duration-s", "1e6"], "testbed --duration-s must be in (0, 3600]"),
        (["--map", "/tmp/evil"], "testbed --map must be a map name"),
        (["--map", "dm1.bsp"], "testbed --map must be a map name"),
        (["--out", "/dev/null"], "--out: /dev/null exists and is not a directory"),
        (["--campaign", "standard", "--out", "/dev/null"], "testbed --out: /dev/null exists"),
        (["--primitives", "--out", "/dev/null"], "testbed --out: /dev/null exists"),
        (["--compare", "/nonexistent"], "testbed --compare: no runs.parquet in /nonexistent"),
        (["--compare", "x", "--campaign", "standard"], "--compare and --campaign are two"),
        (["--seeds", "1000001"], "argument --seeds: must be a whole number <= 100"),
        (["--seeds", "0"], "argument --seeds: must be a whole number >= 1"),
    ],
)
def test_every_flag_is_bounded_with_a_one_line_refusal(capsys, no_server, args, message):
    refused(capsys, ["testbed", "--duration-s", "1", *args], message)


def test_a_map_path_unpacks_nothing_next_to_it(capsys, tmp_path):
    evil = tmp_path / "evil.bsp.gz"
    evil.write_bytes(b"")
    refused(capsys, ["testbed", "--map", str(tmp_path / "evil"), "--duration-s", "1"], "--map")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.bsp.gz"]


def test_compare_out_that_is_a_file_is_refused(capsys, store):
    (store.parent / "taken").write_text("x")
    refused(
        capsys,
        ["testbed", "--compare", str(store), "--out", str(store.parent / "taken")],
        "exists and is not a directory",
    )


def damaged_shared(tmp_path: Path) -> Path:
    shared = tmp_path / "shared"
    (shared / "qw-testbed").mkdir(parents=True)
    (shared / "maps" / "quake-gpl").mkdir(parents=True)
    (shared / "qw-testbed" / "mvdsv-0.35.tar.gz").write_bytes(os.urandom(4096))
    (shared / "qw-testbed" / "qwprogs.dat").write_bytes(b"progs")
    (shared / "maps" / "quake-gpl" / "dm1.bsp.gz").write_bytes(os.urandom(300))
    return shared


def test_a_damaged_shared_map_is_one_line(tmp_path):
    shared = damaged_shared(tmp_path)
    out = cli(
        "testbed", "--shared", str(shared), "--clients", "2", "--duration-s", "1", "--port",
        "27731", env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.splitlines() == [
        f"simsrv: error: testbed --shared: {shared}/maps/quake-gpl/dm1.bsp.gz is not a "
        "readable gzip file " + out.stderr.split("readable gzip file ", 1)[1].strip()
    ]


@pytest.mark.skipif(bool(missing_build_tools()), reason="the build tools are missing")
def test_a_damaged_shared_archive_is_one_line(tmp_path):
    import gzip

    shared = damaged_shared(tmp_path)
    with gzip.open(shared / "maps" / "quake-gpl" / "dm1.bsp.gz", "wb") as packed:
        packed.write(b"BSP")
    cache = tmp_path / "cache"
    out = cli(
        "testbed", "--shared", str(shared), "--clients", "2", "--duration-s", "1", "--port",
        "27732", env={**os.environ, "XDG_CACHE_HOME": str(cache)},
    )  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.splitlines() == [
        f"simsrv: error: testbed --shared: {shared}/qw-testbed/mvdsv-0.35.tar.gz is not a "
        "readable source archive (not a tar archive); put the original tar.gz back in the "
        "shared folder"
    ]
    assert not list((cache / "simsrv" / "testbed").glob("*.staging"))


# -- Ctrl-C -------------------------------------------------------------------------------


@needs_maps
@pytest.mark.parametrize("to_group", [False, True], ids=["parent", "process-group"])
def test_ctrl_c_on_compare_is_130_one_line_and_leaves_no_process(tmp_path, to_group):
    """An hour-long stored condition (the longest a store may hold): the model's workers are
    busy with it when SIGINT comes, to the parent alone or to the whole group (a terminal's
    Ctrl-C)."""
    store = make_store(tmp_path / "s", [base(clients=32, duration_s=3600.0),
                                        base(clients=24, duration_s=3600.0)])  # fmt: skip
    legacy(store)
    for folder in (store / "runs").iterdir():
        (folder / "sends.parquet").unlink()  # drawn phases: no replay of 20 ticks
    process = subprocess.Popen(
        [sys.executable, "-m", "simsrv", *compare(store, "--seeds", "2")],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stderr.readline().startswith("model: 4 runs")
        deadline = time.monotonic() + 30
        workers: list[str] = []
        while time.monotonic() < deadline and len(workers) < 2:
            workers = subprocess.run(
                ["pgrep", "-P", str(process.pid)], capture_output=True, text=True
            ).stdout.split()
            time.sleep(0.1)
        assert len(workers) == 2
        time.sleep(1.0)  # the workers are inside their hour-long runs
        start = time.monotonic()
        if to_group:
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(signal.SIGINT)
        err = process.stderr.read()
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert time.monotonic() - start < 10
    assert process.returncode == 130
    assert err == "simsrv: interrupted\n"
    time.sleep(0.5)
    assert [pid for pid in workers if Path(f"/proc/{pid}").exists()] == []
