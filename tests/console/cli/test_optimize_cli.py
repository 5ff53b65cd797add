"""`hft-console optimize` as a user runs it, on the shared spot recording: the walk-forward
table, JSON, the report, resuming from the study file, Ctrl-C, and bad input in one line."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys

import pytest

from console.cli.progress import progress_bar
from tests.support.cli import CLI, REPO, checkout_env, run_cli, with_sigint_default
from tests.support.recordings import shared_spot

ENV = checkout_env(HFT_CONSOLE_LAYA__PREFER_GPU="false")
SPREAD = "trading.strategy.half_spread_bps"


def optimize(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("optuna")  # the research extra
    return run_cli("optimize", "--replay", str(shared_spot()), *args, env=ENV, timeout=timeout)


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    """Two folds, two trials, with --json and --report; its study file."""
    folder = tmp_path_factory.mktemp("optimize")
    study, report = folder / "study.journal", folder / "report"
    common = ("--space", f"{SPREAD}=0.5:6:log", "--folds", "2", "--trials", "2", "--jobs", "2")
    common += ("--study", str(study))
    done = optimize(*common, "--json", "--report", str(report))
    return common, study, report, done


def test_the_walk_forward_prints_in_and_out_of_sample_figures_as_json(walked):
    _, _, _, done = walked
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    (step,) = result["steps"]
    assert len(step["trials"]) == 2 and step["chosen"] in (0, 1)
    assert set(step["point"]) == {SPREAD}
    for figures in (step["in_sample_figures"], step["out_of_sample_figures"]):
        assert figures["hours"] > 0.08 and figures["net_per_hour"] is not None
    assert result["overall"]["out_of_sample"] == step["out_of_sample_figures"]
    assert "step 1/1: 2/2 trials" in done.stderr


def test_on_a_terminal_each_step_is_one_line_with_a_bar_of_its_trials(tmp_path):
    pytest.importorskip("optuna")  # the research extra
    terminal, stderr = pty.openpty()
    search = ("--space", f"{SPREAD}=0.5:6:log", "--folds", "2", "--trials", "2", "--jobs", "1")
    with os.fdopen(terminal, "rb", buffering=0) as drawn:
        done = subprocess.run(
            [*CLI, "optimize", "--replay", str(shared_spot()), *search, "--json"],
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=tmp_path,
            env=ENV,
            timeout=300,
        )
        os.close(stderr)
        err = drawn.read(65_536).decode()
    assert done.returncode == 0, err
    bar, pace = err.split("\r\n")[:2]  # the terminal writes a newline as \r\n
    assert bar == (
        f"\rstep 1/1: 1/2 trials {progress_bar(0.5)}\x1b[K"
        f"\rstep 1/1: 2/2 trials {progress_bar(1.0)}\x1b[K"
    )
    assert pace.startswith("hft-console optimize: 2 trials in ")


def test_the_report_holds_the_charts_beside_the_chosen_settings_backtest(walked):
    _, _, report, _ = walked
    page = (report / "optimisation.html").read_text()
    assert "in-sample" in page and "out-of-sample" in page and "data:image/png" in page
    assert (report / "charts" / "step-1.png").read_bytes().startswith(b"\x89PNG")
    assert (report / "backtest" / "report.html").is_file()
    assert json.loads((report / "walk-forward.json").read_text())["steps"]


def test_a_rerun_resumes_from_the_study_file_and_runs_nothing_again(walked):
    common, study, _, first = walked
    before = study.read_bytes()
    again = optimize(*common)
    assert again.returncode == 0, again.stderr
    assert "trials" not in again.stderr  # no batch ran
    assert study.read_bytes() == before
    chosen = json.loads(first.stdout)["steps"][0]
    assert f"chosen: trial {chosen['chosen']}: {SPREAD}=" in again.stdout
    assert "all steps: the chosen settings in sample and out of sample" in again.stdout
    net = chosen["out_of_sample_figures"]["net_per_hour"]
    assert f"{net:+,.2f}" in again.stdout.split("net per hour (USDT)")[1].split("\n")[0]


def test_a_study_file_from_another_space_is_refused_in_one_line(walked):
    common, study, _, _ = walked
    other = [f"{SPREAD}=0.5:7:log" if arg.startswith(SPREAD) else arg for arg in common]
    done = optimize(*other)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"hft-console optimize: --study {study}: made for another search: its space is "
        f"{SPREAD}=0.5:6:log, this run's {SPREAD}=0.5:7:log (a new search takes a new --study "
        "file)\n"
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--space", f"{SPREAD}=6:0.5"), f"--space {SPREAD}=6:0.5: the range is inverted"),
        (("--space", f"{SPREAD}=2:2"), f"--space {SPREAD}=2:2: the range is empty"),
        (("--space", "trading.strategy.spread=1:2"), "unknown key 'spread' in [trading.strategy]"),
        (
            ("--space", f"{SPREAD}=1:2", "--folds", "20"),
            "--folds 20: the recordings' 10.8 min of market time make at most 10 folds",
        ),
        (("--space", f"{SPREAD}=1:2", "--set", f"{SPREAD}=3"), "both searched (--space) and"),
        (
            ("--space", f"{SPREAD}=1:2", "--symbols", "BTCUSDT", "--hedge", "SOLUSDT"),
            "has no SOLUSDT (the hedge): it has BTCUSDT, ETHUSDT",
        ),
        (
            ("--space", f"{SPREAD}=1:2", "--symbols", "BTCUSDT,ETHUSDT"),
            "--symbols BTCUSDT,ETHUSDT: --symbols now lists the quoted symbols and --hedge",
        ),
        (("--space", f"{SPREAD}=1:2", "--hedge", "none"), "--hedge: only with --symbols"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, said):
    done = optimize(*args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
    assert done.stderr.startswith("hft-console optimize: ")


def test_a_study_file_that_is_not_a_journal_or_is_a_recording_is_refused(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    space = ("--space", f"{SPREAD}=1:2", "--folds", "2")
    done = optimize(*space, "--study", str(notes))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"--study {notes}: not an Optuna journal file" in done.stderr
    assert notes.read_text() == "my notes\n"
    done = optimize(*space, "--study", str(shared_spot()))
    assert done.returncode == 2
    assert done.stderr.endswith(f"--study {shared_spot()}: is one of the recordings (--replay)\n")


def test_without_optuna_it_names_the_extra_to_install():
    hide = "import sys; sys.modules['optuna'] = None; from console.cli.main import main; "
    command = f"{hide}sys.exit(main(sys.argv[1:]))"
    args = ["optimize", "--replay", str(shared_spot()), "--space", f"{SPREAD}=1:2"]
    done = subprocess.run(
        [sys.executable, "-c", command, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=ENV,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert done.stderr.endswith("pip install 'hft-console[research]'\n"), done.stderr


def test_ctrl_c_is_one_line_exit_130_and_the_same_command_resumes(tmp_path):
    pytest.importorskip("optuna")  # the research extra
    study = tmp_path / "study.journal"
    args = [*CLI, "optimize", "--replay", str(shared_spot()), "--space", f"{SPREAD}=0.5:6:log"]
    args += ["--folds", "2", "--trials", "3", "--jobs", "1", "--study", str(study)]
    process = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=ENV,
        start_new_session=True,
        preexec_fn=with_sigint_default,
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline()  # a trial is told: the next one is under way
        assert first == "step 1/1: 1/3 trials\n", first
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, err
    assert out == "" and "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.splitlines()[-1] == (
        f"hft-console optimize: interrupted; what finished is kept in {study}: the same "
        "command resumes"
    )
    resumed = subprocess.run(
        [*args, "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=ENV,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    (step,) = json.loads(resumed.stdout)["steps"]
    numbers = [trial["number"] for trial in step["trials"]]
    assert len(numbers) == 3 and numbers[0] == 0  # the finished trial kept, the cut one not
    assert resumed.stderr.startswith("step 1/1: 2/3 trials\n")
