"""`python -m engine.lab`: train the shipped model's way on the three shared sessions (today's
labels and choice), or on other recordings."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from engine.lab.model_card import format_report
from engine.lab.train import train
from engine.lab.train_config import TrainConfig
from engine.laya.config import DEFAULT_MODEL_PATH

SHARED_REPLAY = Path(__file__).resolve().parents[3] / "shared" / "data" / "replay"
SHIPPED_RECORDINGS = tuple(
    SHARED_REPLAY / name
    for name in (
        "spot_btc_eth_20240808.bitget.gz",
        "cm_btc_eth_20240808.bitget.gz",
        "usdm_btc_20230405.bitget.gz",
    )
)
"""The real sessions the shipped model was trained on (beside the project, not in it)."""


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m engine.lab`: retrain the shipped model (or train on other data)."""
    parser = argparse.ArgumentParser(prog="python -m engine.lab", description="Train a Laya model.")
    parser.add_argument(
        "--replay", nargs="+", default=[os.fspath(path) for path in SHIPPED_RECORDINGS]
    )
    parser.add_argument("--out", default=os.fspath(DEFAULT_MODEL_PATH), metavar="MODEL.onnx")
    parser.add_argument(
        "--force", action="store_true", help="replace --out and its card (the shipped model's)"
    )
    parser.add_argument("--candidate", help="ship this candidate instead of choosing one")
    parser.add_argument("--no-backtest", action="store_true", help="choose without backtests")
    parser.add_argument("--json", action="store_true", help="print the folds as JSON")
    args = parser.parse_args(argv)
    config = TrainConfig(candidate=args.candidate, backtest=not args.no_backtest)
    try:
        report = train(args.replay, args.out, config, force=args.force)
    except (OSError, ValueError) as error:
        print(f"{parser.prog}: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.folds.as_dict()))
    else:
        print(format_report(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
