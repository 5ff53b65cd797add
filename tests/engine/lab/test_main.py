"""`python -m engine.lab`: the model it would replace is kept without --force, said in one line."""

from __future__ import annotations

from engine.lab.__main__ import main


def test_an_existing_model_is_kept_without_force(sessions, tmp_path, capsys):
    out = tmp_path / "laya.onnx"
    out.write_bytes(b"the shipped model")
    assert main(["--replay", *map(str, sessions), "--out", str(out), "--no-backtest"]) == 2
    assert capsys.readouterr().err == (
        f"python -m engine.lab: --out {out}: exists; add --force to replace it\n"
    )
    assert out.read_bytes() == b"the shipped model"
