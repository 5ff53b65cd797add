"""What `train`, `eval`, `bench`, `record` and `run` write and read: an output path is checked
before any work (an existing file kept without --force, a folder, a link to nothing refused), the
same recording is not given twice, and a file that is not a model is one line, exit status 2."""

from __future__ import annotations

import shutil

import pytest

from console.cli.main import main
from engine.sim.recording import simulate_recording


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli-outputs") / "session.bitget.gz"
    return simulate_recording(path, 1.0, seed=3).path


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *argv) -> str:
    """The one line a refused command says; it exits 2 and prints nothing on stdout."""
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


@pytest.mark.parametrize("twice", ["the same path", "a copy"])
def test_train_refuses_the_same_recording_twice(recording, tmp_path, capsys, twice):
    other = recording
    if twice == "a copy":
        other = tmp_path / "renamed.bitget.gz"
        shutil.copyfile(recording, other)
    out = tmp_path / "model.onnx"
    err = refused(capsys, "train", "--replay", str(recording), str(other), "--out", str(out))
    said = "is given twice" if twice == "the same path" else f"is a copy of {recording}"
    assert f"hft-console train: {other} {said}: give each recording once" in err
    assert list(tmp_path.iterdir()) == ([] if twice == "the same path" else [other])


def test_train_refuses_two_recordings_of_one_name(recording, tmp_path, capsys):
    other = tmp_path / "day2" / recording.name
    other.parent.mkdir()
    other.write_bytes(simulate_recording(tmp_path / "x.gz", 1.0, seed=4).path.read_bytes())
    err = refused(
        capsys, "train", "--replay", str(recording), str(other), "--out", str(tmp_path / "m.onnx")
    )
    assert f"two recordings are named {recording.name}" in err


def test_train_backtest_with_one_recording_is_refused_not_ignored(recording, tmp_path, capsys):
    out = tmp_path / "model.onnx"
    err = refused(capsys, "train", "--replay", str(recording), "--out", str(out), "--backtest")
    assert "--backtest compares the candidates on left-out recordings: give two or more" in err
    assert not out.exists()


def test_train_refuses_one_recording_too_short_for_two_validation_blocks(
    recording, tmp_path, capsys
):
    out = tmp_path / "model.onnx"
    code, printed, err = run(capsys, "train", "--replay", str(recording), "--out", str(out))
    assert (code, printed) == (2, "") and "Traceback" not in err
    # After the replay's progress bar: its span is known once it is read.
    assert err.splitlines()[-1] == (
        f"hft-console train: {recording.name} spans 0.02 h of market time: too short to split "
        "into two validation blocks of 8 h; give a longer recording or two or more recordings"
    )
    assert not out.exists() and not out.with_suffix(".md").exists()


def test_train_never_replaces_a_model_or_its_card_without_force(recording, tmp_path, capsys):
    notes = tmp_path / "notes.md"
    notes.write_text("my notes")
    out = tmp_path / "notes.onnx"
    err = refused(capsys, "train", "--replay", str(recording), "--out", str(out))
    assert err == (
        f"hft-console train: the model card {notes}: exists; add --force to replace it\n"
    )
    out.write_bytes(b"an older model")
    err = refused(capsys, "train", "--replay", str(recording), "--out", str(out))
    assert f"--out {out}: exists; add --force to replace it" in err
    assert notes.read_text() == "my notes" and out.read_bytes() == b"an older model"
    card = tmp_path / "model.md"
    err = refused(capsys, "train", "--replay", str(recording), "--out", str(card), "--force")
    assert "the model card would be written over the model" in err
    err = refused(capsys, "train", "--replay", str(recording), "--out", str(recording), "--force")
    assert "is one of the files this command reads" in err


def test_eval_predictions_out_is_kept_without_force_and_refused_before_the_work(
    recording, laya_model, tmp_path, capsys
):
    mine = tmp_path / "predictions.csv"
    mine.write_text("mine")
    common = ("eval", "--replay", str(recording), "--model", str(laya_model))
    err = refused(capsys, *common, "--predictions-out", str(mine))
    assert err == (
        f"hft-console eval: --predictions-out {mine}: exists; add --force to replace it\n"
    )
    assert mine.read_text() == "mine"
    err = refused(capsys, *common, "--predictions-out", str(tmp_path))
    assert "is a folder; give the name of a file to write" in err
    err = refused(capsys, *common, "--predictions-out", str(recording), "--force")
    assert "is one of the files this command reads" in err


def test_eval_refuses_the_same_recording_twice(recording, laya_model, capsys):
    err = refused(
        capsys, "eval", "--replay", str(recording), str(recording), "--model", str(laya_model)
    )
    assert f"{recording} is given twice" in err


@pytest.fixture
def not_a_model(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("these are my notes, not a model\n")
    return path


@pytest.mark.parametrize("command", ["eval", "bench"])
def test_a_file_that_is_not_an_onnx_model_is_one_line(recording, not_a_model, capsys, command):
    err = refused(capsys, command, "--replay", str(recording), "--model", str(not_a_model))
    assert err.startswith(f"hft-console {command}: {not_a_model} is not a loadable ONNX model")


def test_record_refuses_an_existing_recording_before_it_starts(tmp_path, capsys):
    kept = tmp_path / "mine.gz"
    kept.write_bytes(b"a recording")
    err = refused(capsys, "record", "--out", str(kept), "--sim", "--duration", "1")
    assert f"--out {kept}: exists; give a name that is not taken" in err
    assert kept.read_bytes() == b"a recording"


def test_run_stats_out_on_a_folder_is_refused_before_the_engine_starts(tmp_path, capsys):
    link = tmp_path / "figures.json"
    link.symlink_to(tmp_path / "gone" / "figures.json")
    for path, message in (
        (tmp_path, "is a folder"),
        (link, "is a symbolic link to"),
    ):
        err = refused(capsys, "run", "--headless", "--duration", "1", "--stats-out", str(path))
        assert f"hft-console run: --stats-out {path}: {message}" in err
