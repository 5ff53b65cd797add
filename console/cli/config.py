"""`hft-console config show | path | init`, and the settings `hft-console run` starts from.

The settings themselves are `engine.settings`; this adds the command line on top and the
console's own checks (the keymap's binding ids, the refresh rate, the bandwidth), which the
engine cannot make without importing the UI. Each subcommand imports what it needs when it
runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from console.cli.errors import error_line

if TYPE_CHECKING:
    from console.engine.config import EngineAdapterConfig
    from engine.kev.config import LlamaServerConfig
    from engine.settings.schema import Settings

BOOK_FLAGS = {
    # the flag -> (its attribute, the setting it overrides)
    "--symbols": ("symbols", "engine.symbols"),
    "--hedge": ("hedge", "engine.hedge"),
    "--leader": ("leader", "engine.leader"),
}
"""The book's flags (`add_book_options`) of `run` and the commands that replay recordings."""

RUN_FLAGS = {
    # run's flag -> (its attribute, the setting it overrides)
    **BOOK_FLAGS,
    "--seed": ("seed", "engine.sim_seed"),
    "--model": ("model", "laya.model_path"),
    "--shadow-model": ("shadow_model", "laya.shadow_model"),
    "--mode": ("mode", "trading.mode"),
    "--journal": ("journal", "trading.journal_path"),
    "--refresh-hz": ("refresh_hz", "console.refresh_hz"),
    "--low-bandwidth": ("bandwidth", "console.bandwidth"),
    "--exit-policy": ("exit_policy", "console.shutdown_policy"),
}
"""The `run` flags that override a setting; a flag not given (None) leaves the setting."""

KEV_SERVE_FLAGS = {
    "--model": ("model", "kev.model_path"),
    "--llama-server": ("llama_server", "kev.llama_server"),
    "--ctx-size": ("ctx_size", "kev.context_size"),
    "--gpu-layers": ("gpu_layers", "kev.gpu_layers"),
    "--threads": ("threads", "kev.threads"),
    "--nice": ("nice", "kev.niceness"),
    "--ready-timeout": ("ready_timeout", "kev.ready_timeout_s"),
}
"""The same for `kev serve` (its --host and --port override [kev] url's)."""


def add_config_parser(commands: argparse._SubParsersAction) -> None:
    """Register `config` and its actions on the main parser's subcommands."""
    config = commands.add_parser(
        "config",
        help="the configuration file: the effective settings, its path, or a commented one",
        description="Settings come from the built-in defaults, then the file, then "
        "HFT_CONSOLE_<SECTION>__<KEY> environment variables, then run's flags.",
    )
    actions = config.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    show = actions.add_parser(
        "show", help="the effective settings as TOML, each with where it came from"
    )
    path = actions.add_parser("path", help="where the configuration file is (or would be)")
    init = actions.add_parser(
        "init", help="write the file with every key at its default, each with a comment"
    )
    init.add_argument(
        "--force",
        action="store_true",
        help="overwrite an existing file (the old one is kept as config.toml.bak, or .bak.1, "
        ".bak.2, ... when that is taken: a backup is never overwritten)",
    )
    for action in (show, path, init):
        action.add_argument(
            "--config",
            metavar="FILE",
            help="this file instead of the default one (or set HFT_CONSOLE_CONFIG)",
        )


def run_config(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """0 done; 1 `show` found settings `run` cannot use; 2 an error (said on `err`)."""
    from engine.settings.sources import SettingsError
    from engine.user_files import OutputRefused

    out = out or sys.stdout
    err = err or sys.stderr
    name = f"hft-console config {args.config_command}"
    try:
        if args.config_command == "show":
            return _show(args, out, err)
        if args.config_command == "path":
            return _path(args, out, err)
        return _init(args, out)
    except (SettingsError, OutputRefused, OSError) as error:
        print(f"{name}: {error_line(error)}", file=err)
        return 2


def _file(args: argparse.Namespace) -> Path:
    from engine.settings.reader import settings_path

    return Path(args.config).expanduser() if args.config else settings_path()


def _show(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """The settings; exit 1 when they load but cannot build what `run` needs (the console's
    own checks included)."""
    from engine.settings.reader import ENV_PREFIX
    from engine.settings.schema import MarketNeeded
    from engine.settings.sources import SettingsError
    from engine.settings.writer import dump_settings

    settings = _read(args.config)
    file = _file(args)
    variables = sorted(name for name in os.environ if name.startswith(ENV_PREFIX))
    read = "read" if settings.path is not None else "not found: built-in defaults"
    print(f"# configuration file: {file} ({read})", file=out)
    print(f"# environment: {', '.join(variables) or 'no HFT_CONSOLE_* variables'}", file=out)
    print(dump_settings(settings, with_sources=True), end="", file=out)
    problems = []
    console = ("console", lambda: check_console_settings(settings))
    for label, build in [*settings.configurations(), console]:
        try:
            build()
        except MarketNeeded as error:  # not a problem: said, as what is checked at start
            print(f"# {label}: {error}", file=out)
        except SettingsError as error:
            problems.append(f"{label}: {error}")
    for problem in problems:
        print(f"hft-console config show: {problem}", file=err)
    return 1 if problems else 0


def _path(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    file = _file(args)
    print(file, file=out)
    if not file.exists():
        print(f"({file} does not exist yet: hft-console config init writes it)", file=err)
    return 0


def _init(args: argparse.Namespace, out: TextIO) -> int:
    """Write the commented defaults where there is no file yet, or over one with --force
    (keeping the old one in the first free backup name). The file is written whole or not at
    all."""
    from engine.settings.reader import load_settings
    from engine.settings.schema import Settings
    from engine.settings.sources import SettingsError
    from engine.settings.writer import dump_settings
    from engine.user_files import check_output_file, replacing

    file = _file(args)
    check_output_file(file, str(file), force=args.force)
    text = dump_settings(Settings())
    file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with replacing(file, mode=0o644) as written:
        written.write_text(text, encoding="utf-8")
        # What was written must read back as the defaults, or nothing replaces the old file.
        if load_settings(path=written, environ={}) != Settings():
            raise SettingsError([f"the file written for {file} does not read back as written"])
        backup = None
        if file.exists():
            backup = _unused_backup_name(file)
            shutil.copy2(file, backup)
    kept = f"; the old one is {backup}" if backup is not None else ""
    print(f"wrote {file}: every key at its default, each with a comment{kept}", file=out)
    return 0


def _unused_backup_name(file: Path) -> Path:
    """`config.toml.bak`, else the first of `config.toml.bak.1`, `.bak.2`, ... not taken: each
    backup may be the only copy of someone's edits."""
    backup = file.with_name(f"{file.name}.bak")
    number = 0
    while backup.exists() or backup.is_symlink():
        number += 1
        backup = file.with_name(f"{file.name}.bak.{number}")
    return backup


def load_console_settings(config: str | os.PathLike[str] | None = None) -> Settings:
    """The settings (from `config`, else the default file) with the console's own checks."""
    settings = _read(config)
    check_console_settings(settings)
    return settings


def _read(config: str | os.PathLike[str] | None) -> Settings:
    from engine.settings.reader import load_settings

    return load_settings(path=Path(config).expanduser() if config else None)


def console_keymap(settings: Settings) -> dict[str, str]:
    """[console.keymap]: the bindings it moves off their default keys (`console.keymap`)."""
    return dict(settings.console.keymap)


def adapter_config(settings: Settings) -> EngineAdapterConfig:
    """How the engine feeds the console: pictures at [console] refresh_hz, their read-only
    parts as often as [console] bandwidth draws them, and the VRAM monitor on Laya's GPU with
    the [gpu] budget, finding Kev through `kev serve`'s pid file."""
    from console.bandwidth import BUDGETS, Bandwidth
    from console.engine.config import EngineAdapterConfig
    from engine.kev.server import llama_server_pid_path

    return EngineAdapterConfig(
        publish_hz=settings.console.refresh_hz,
        detail_hz=BUDGETS[Bandwidth(settings.console.bandwidth)].detail_hz,
        gpu=settings.gpu_monitor_config(kev_pid_file=str(llama_server_pid_path())),
    )


def check_console_settings(settings: Settings) -> None:
    """[console] as the console itself checks it, and the re-arm phrase against the kill
    switch's keys; raises `SettingsError` naming the keys."""
    from console.app import ConsoleConfig
    from console.keymap import refuse_untypable
    from engine.trading.config import default_risk_config

    try:
        config = ConsoleConfig(
            refresh_hz=settings.console.refresh_hz,
            keymap=console_keymap(settings),
            bandwidth=settings.console.bandwidth,  # type: ignore[arg-type]
        )
    except ValueError as error:
        raise settings.invalid(error, "console") from error
    # The settings keep the engine's phrase (`gateway_config` starts from these defaults).
    phrase = default_risk_config().rearm_confirmation
    try:
        refuse_untypable(phrase, f"the re-arm phrase {phrase!r}", config.keymap)
    except ValueError as error:
        raise settings.invalid(error, "console") from error


def settings_for_run(args: argparse.Namespace) -> Settings:
    """`run`'s settings: the file and the environment (`load_console_settings`), then each of
    `RUN_FLAGS` that was given, and `--cpu`."""
    settings = load_console_settings(getattr(args, "config", None))
    extra = {"laya.prefer_gpu": ("--cpu", False)} if getattr(args, "cpu", False) else {}
    flagged = _with_flags(settings, args, RUN_FLAGS, extra)
    if flagged is not settings:
        check_console_settings(flagged)
    return flagged


def recording_book(
    settings: Settings, args: argparse.Namespace
) -> tuple[Settings, tuple[str, ...] | None]:
    """The settings of a command that reads recordings (backtest, optimize, train, eval) with
    the book its `BOOK_FLAGS` name, and that book's market symbols; None without --symbols:
    each recording's own. A ValueError for --hedge or --leader without the --symbols they go
    with."""
    if args.symbols is None:
        given = [flag for flag, (attribute, _) in BOOK_FLAGS.items() if getattr(args, attribute)]
        if given:
            raise ValueError(
                f"{' and '.join(given)}: only with --symbols (without it each recording's own "
                "symbols run): give the quoted symbols too"
            )
        return settings, None
    settings = _with_flags(settings, args, BOOK_FLAGS)
    return settings, settings.engine.market_symbols


def kev_serve_config(
    args: argparse.Namespace, default_model: Callable[[], str]
) -> LlamaServerConfig:
    """`kev serve`'s llama-server: [kev] with `KEV_SERVE_FLAGS` on top; the model is
    `default_model()` when neither names one; --host and --port bind elsewhere than the url."""
    from engine.settings.reader import load_settings

    settings = _with_flags(load_settings(), args, KEV_SERVE_FLAGS)
    config = settings.llama_server_config(settings.kev.model_path or default_model())
    return dataclasses.replace(
        config,
        host=config.host if args.host is None else args.host,
        port=config.port if args.port is None else args.port,
    )


def configured_kev_url() -> str:
    """Kev's server as the settings name it ([kev] url)."""
    from engine.settings.reader import load_settings

    return load_settings().kev.url


def _with_flags(
    settings: Settings,
    args: argparse.Namespace,
    flags: Mapping[str, tuple[str, str]],
    extra: Mapping[str, tuple[str, object]] | None = None,
) -> Settings:
    """`settings` with each of `flags` (flag -> (attribute, key)) that `args` gives, and
    `extra` (key -> (flag, value)); the same object when there are none."""
    values: dict[str, object] = {}
    sources: dict[str, str] = {}
    for flag, (attribute, key) in flags.items():
        value = getattr(args, attribute, None)
        if value is not None:
            values[key], sources[key] = value, flag
    for key, (flag, value) in (extra or {}).items():
        values[key], sources[key] = value, flag
    return settings.with_overrides(values, sources) if values else settings
