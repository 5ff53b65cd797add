"""`hft-console soak`: a long replay at maximum speed through the paper-trading engine, its
figures against their targets (see `engine.tools.soak`). Exits 1 when a target fails, 2 on bad
input.

The engine is imported only when the command runs, like the rest of the command line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from console.cli.errors import error_line


def _frames(text: str) -> int:
    from engine.tools.soak import MIN_FRAMES

    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < MIN_FRAMES:
        raise argparse.ArgumentTypeError(f"the soak needs at least {MIN_FRAMES:,} frames")
    return value


def add_soak_parser(commands: argparse._SubParsersAction) -> None:
    """Register `soak` on the main parser's subcommands."""
    soak = commands.add_parser(
        "soak",
        help="a long replay at max speed, paper trading: memory, queues, latency drift",
        description="Loop recordings to --frames frames (time and trade ids shifted forward "
        "each pass) and replay them at maximum speed through the engine trading on paper; "
        "print the figures with each target and PASS/FAIL. Exits 1 when a target fails.",
    )
    soak.add_argument(
        "--frames",
        type=_frames,
        default=1_000_000,
        metavar="N",
        help="frames to replay (default 1,000,000)",
    )
    soak.add_argument(
        "--replay",
        nargs="+",
        metavar="FILE",
        help="recordings, looped in order (default: the files in $HFT_CONSOLE_REPLAY_DIR, else "
        "in the per-user data directory's recordings/; none there: a generated simulator "
        "recording)",
    )
    soak.add_argument("--model", metavar="ONNX", help="Laya model (default: the shipped one)")
    soak.add_argument(
        "--cpu", action="store_true", help="run Laya on the CPU even where CUDA works"
    )
    soak.add_argument(
        "--model-verdicts",
        action="store_true",
        help="trade on the model's verdicts (default: HOLD, so quotes reach the venue at max "
        "speed; Laya still runs on every frame)",
    )
    soak.add_argument(
        "--journal", metavar="FILE", help="journal file (default: a temporary directory)"
    )
    soak.add_argument(
        "--kev-url", metavar="URL", help="run Kev's hub against this llama-server (default: off)"
    )
    soak.add_argument("--json", action="store_true", help="print one JSON object")


def run_soak(args: argparse.Namespace) -> int:
    try:
        return _soak(args)
    except (OSError, ValueError) as error:
        print(f"hft-console soak: {error_line(error)}", file=sys.stderr)
        return 2


def _soak(args: argparse.Namespace) -> int:
    from engine.laya.config import DEFAULT_MODEL_PATH, LayaClassifierConfig
    from engine.tools.soak import (
        SoakConfig,
        default_replay_dir,
        find_recordings,
        format_table,
        generate_recording,
        soak,
    )

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    laya = LayaClassifierConfig(
        model_path=args.model or DEFAULT_MODEL_PATH, prefer_gpu=not args.cpu
    )
    with tempfile.TemporaryDirectory(prefix="hft-soak-source-") as scratch:
        notes: list[str] = []
        if args.replay:
            recordings = tuple(Path(path) for path in args.replay)
        else:
            directory = default_replay_dir()
            recordings = find_recordings(directory)
            if not recordings:
                progress(f"soak: no recordings in {directory}; generating a simulator recording")
                generated, note = generate_recording(Path(scratch), args.frames)
                recordings = (generated,)
                notes.append(f"{note} (none in {directory})")
        config = SoakConfig(
            recordings,
            frames=args.frames,
            laya=laya,
            model_verdicts=args.model_verdicts,
            journal_path=Path(args.journal) if args.journal else None,
            kev_url=args.kev_url,
        )
        result = soak(config, notes=notes, progress=progress)
    print(json.dumps(result.as_dict()) if args.json else format_table(result))
    return 0 if result.passed else 1
