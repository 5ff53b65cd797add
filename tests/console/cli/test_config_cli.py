"""`hft-console config show | path | init` and the settings `run` starts from, through the real
command line with a private config directory."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from support.cli import CLI

from console.app import ConsoleConfig
from console.bandwidth import BUDGETS, Bandwidth
from console.cli.config import (
    adapter_config,
    console_keymap,
    kev_serve_config,
    settings_for_run,
)
from console.cli.launch import LaunchOptions
from console.cli.main import build_parser, main
from console.engine.handle import ShutdownPolicy
from engine.gpu import GIB, VramBudget
from engine.kev.server import free_port, llama_server_pid_path
from engine.settings.reader import load_settings
from engine.settings.schema import SHUTDOWN_POLICIES, ConsoleSettings, Settings
from engine.settings.sources import SourceKind
from engine.settings.writer import dump_settings


@pytest.fixture
def config_dir(tmp_path, monkeypatch) -> Path:
    """An empty per-user config directory and no HFT_CONSOLE_* variables."""
    for name in list(os.environ):
        if name.startswith("HFT_CONSOLE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path / "config" / "hft-console"


def config_file(config_dir: Path, text: str) -> Path:
    config_dir.mkdir(parents=True, exist_ok=True)
    path = config_dir / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_path_prints_the_file_in_the_config_directory(config_dir, capsys):
    assert main(["config", "path"]) == 0
    out, err = capsys.readouterr()
    assert out == f"{config_dir / 'config.toml'}\n"
    assert "does not exist yet: hft-console config init writes it" in err


def test_init_writes_every_key_at_its_default_with_comments(config_dir, capsys):
    assert main(["config", "init"]) == 0
    path = config_dir / "config.toml"
    assert capsys.readouterr().out.startswith(f"wrote {path}: every key at its default")
    assert path.read_text(encoding="utf-8") == dump_settings(Settings())
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert load_settings(environ={}) == Settings()
    assert sorted(item.name for item in config_dir.iterdir()) == ["config.toml"]  # no temp left


def test_init_refuses_to_overwrite_without_force(config_dir, capsys):
    path = config_file(config_dir, "[engine]\nsim_seed = 3\n")
    assert main(["config", "init"]) == 2
    err = capsys.readouterr().err
    assert err == f"hft-console config init: {path}: exists; add --force to replace it\n"
    assert path.read_text() == "[engine]\nsim_seed = 3\n"


def test_init_force_replaces_the_file_and_keeps_the_old_one(config_dir, capsys):
    path = config_file(config_dir, "[engine]\nsim_seed = 3\n")
    assert main(["config", "init", "--force"]) == 0
    assert f"the old one is {path}.bak" in capsys.readouterr().out
    assert load_settings(environ={}) == Settings()
    assert Path(f"{path}.bak").read_text() == "[engine]\nsim_seed = 3\n"


def test_init_force_twice_keeps_every_backup(config_dir, capsys):
    path = config_file(config_dir, "[engine]\nsim_seed = 3\n")
    assert main(["config", "init", "--force"]) == 0
    path.write_text("[engine]\nsim_seed = 4\n")  # edited again
    capsys.readouterr()
    assert main(["config", "init", "--force"]) == 0
    assert f"the old one is {path}.bak.1" in capsys.readouterr().out
    assert Path(f"{path}.bak").read_text() == "[engine]\nsim_seed = 3\n"
    assert Path(f"{path}.bak.1").read_text() == "[engine]\nsim_seed = 4\n"


def test_show_without_a_file_shows_the_defaults(config_dir, capsys):
    assert main(["config", "show"]) == 0
    out = capsys.readouterr().out
    assert (
        f"# configuration file: {config_dir / 'config.toml'} (not found: built-in defaults)" in out
    )
    assert "# environment: no HFT_CONSOLE_* variables" in out
    assert "max_net_delta_usdt = 1500.0  # default" in out


def test_show_says_where_each_value_came_from(config_dir, capsys, monkeypatch):
    path = config_file(config_dir, "[engine]\nsim_seed = 7\n\n[risk]\nmax_open_orders = 12\n")
    monkeypatch.setenv("HFT_CONSOLE_KEV__MAX_TOKENS", "64")
    assert main(["config", "show"]) == 0
    out = capsys.readouterr().out
    assert f"# configuration file: {path} (read)" in out
    assert "# environment: HFT_CONSOLE_KEV__MAX_TOKENS" in out
    assert f"sim_seed = 7  # {path} line 2 (the default)" in out
    assert f"max_open_orders = 12  # {path} line 5" in out
    assert "max_tokens = 64  # environment HFT_CONSOLE_KEV__MAX_TOKENS" in out
    assert "status_interval_s = 0.1  # default" in out


def test_show_names_an_unknown_key_and_its_line(config_dir, capsys):
    path = config_file(config_dir, "[risk]\nmax_open_orders = 12\nmax_net_delta = 900\n")
    assert main(["config", "show"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert f"hft-console config show: {path} line 3: unknown key 'max_net_delta' in [risk]" in err


def test_show_checks_the_keymap_against_the_console_bindings(config_dir, capsys):
    path = config_file(config_dir, '[console.keymap]\n"console.kil" = "K"\n')
    assert main(["config", "show"]) == 1
    out, err = capsys.readouterr()
    assert f'"console.kil" = "K"  # {path} line 2' in out
    assert f'[console.keymap] console.kil = "K" ({path} line 2)' in err
    assert "keymap names unknown bindings ['console.kil']" in err


def test_show_reports_a_key_bound_twice_naming_both_bindings(config_dir, capsys):
    path = config_file(config_dir, '[console.keymap]\n"console.kill" = "q"\n')
    assert main(["config", "show"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f'hft-console config show: console: [console.keymap] console.kill = "q" ({path} line 2): '
        'keymap binds "q" twice in the console: console.kill ("q") and console.quit '
        '("q,ctrl+c"); give each action a key of its own'
    ]


def test_run_refuses_a_key_bound_twice_in_one_line(config_dir, capsys):
    path = config_file(config_dir, '[console.keymap]\n"console.kill" = "y"\n')
    assert main(["run", "--headless", "--duration", "1"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f'hft-console run: [console.keymap] console.kill = "y" ({path} line 2): keymap binds "y" '
        'twice in the flatten confirmation dialog: console.kill ("y") and confirm.yes ("y"); '
        "give each action a key of its own"
    ]


def test_run_refuses_a_kill_key_the_rearm_phrase_needs_in_one_line(config_dir, capsys):
    path = config_file(config_dir, '[console.keymap]\n"console.kill" = "E"\n')
    assert main(["run", "--headless", "--duration", "1"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f'hft-console run: [console.keymap] console.kill = "E" ({path} line 2): keymap binds '
        "console.kill to \"E\", but the re-arm phrase 'REARM' needs 'E' typed and the kill "
        "switch takes its keys first on every screen: give the kill switch another key"
    ]


def test_show_says_when_the_settings_cannot_trade(config_dir, capsys):
    config_file(
        config_dir,
        '[engine]\nsymbols = ["SOLUSDT"]\nhedge = "none"\n\n[engine.instruments.SOLUSDT]\n'
        "tick_size = 0.001\n"
        "size_step = 0.1\nmin_notional_usdt = 5\n\n[trading.strategy]\nquote_size = 0.01\n\n"
        "[risk.symbols.SOLUSDT]\nmax_position = 10\nmax_notional_usdt = 2000\n"
        "max_order_size = 5\nmax_position_ceiling = 20\n",
    )
    assert main(["config", "show"]) == 1
    out, err = capsys.readouterr()
    assert "[risk.symbols.SOLUSDT]" in out  # the settings are still shown
    assert "hft-console config show: trading: " in err
    assert "quote_size 0.01 is below one lot of SOLUSDT (0.1)" in err


def test_show_leaves_what_a_symbols_market_gives_to_the_start(config_dir, capsys):
    """NEXOUSDT's contract and price come from its market (a recording, the venue): the
    settings alone are valid, and say which configs are checked at start."""
    config_file(config_dir, '[engine]\nsymbols = ["NEXOUSDT"]\nhedge = "none"\n')
    assert main(["config", "show"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert (
        "# trading: NEXOUSDT: its contract, or its price for the caps in USDT, comes from " in out
    )


def test_another_file_by_option_or_environment(config_dir, tmp_path, capsys, monkeypatch):
    other = tmp_path / "desk.toml"
    other.write_text("[gpu]\nkev_gib = 6.5\n")
    assert main(["config", "show", "--config", str(other)]) == 0
    assert f"kev_gib = 6.5  # {other} line 2" in capsys.readouterr().out
    monkeypatch.setenv("HFT_CONSOLE_CONFIG", str(other))
    assert main(["config", "path"]) == 0
    assert capsys.readouterr().out == f"{other}\n"
    assert main(["config", "init"]) == 2  # it exists
    missing = tmp_path / "missing.toml"
    assert main(["config", "show", "--config", str(missing)]) == 2
    assert f"no configuration file at {missing}" in capsys.readouterr().err


def test_run_flags_override_the_file_and_the_environment(config_dir, monkeypatch):
    path = config_file(
        config_dir,
        '[engine]\nsim_seed = 3\nsymbols = ["BTCUSDT"]\nhedge = "ETHUSDT"\n\n[console]\n'
        "refresh_hz = 10\n",
    )
    monkeypatch.setenv("HFT_CONSOLE_CONSOLE__SHUTDOWN_POLICY", "keep")
    args = build_parser().parse_args(["run", "--seed", "9", "--cpu", "--journal", "j.sqlite"])
    settings = settings_for_run(args)
    assert settings.engine.sim_seed == 9
    assert str(settings.source_of("engine.sim_seed")) == "command line --seed"
    assert settings.laya_config().prefer_gpu is False
    assert settings.trading_config().journal_path == Path.cwd() / "j.sqlite"
    assert settings.console.refresh_hz == 10.0  # no --refresh-hz: the file's
    assert settings.source_of("console.refresh_hz").line == 7
    assert settings.source_of("console.refresh_hz").where == str(path)
    assert settings.console.shutdown_policy == "keep"  # no --exit-policy: the environment's
    assert settings.source_of("engine.symbols").kind is SourceKind.FILE
    flagged = settings_for_run(
        build_parser().parse_args(["run", "--exit-policy", "flatten", "--refresh-hz", "30"])
    )
    assert (flagged.console.shutdown_policy, flagged.console.refresh_hz) == ("flatten", 30.0)


def test_run_reads_the_file_config_names(config_dir, tmp_path):
    other = tmp_path / "desk.toml"
    other.write_text(
        '[engine]\nsymbols = ["BTCUSDT"]\nhedge = "none"\n[console.keymap]\n"console.kill" = "K"\n'
    )
    settings = settings_for_run(build_parser().parse_args(["run", "--config", str(other)]))
    assert settings.path == other
    assert settings.trading_config().symbols == ("BTCUSDT",)
    assert console_keymap(settings) == {"console.kill": "K"}


def test_the_engine_feeds_the_console_as_configured(config_dir):
    config_file(
        config_dir,
        "[console]\nrefresh_hz = 10\n[gpu]\nkev_gib = 5.5\n[laya]\ngpu_mem_limit_gib = 1.0\n",
    )
    adapter = adapter_config(settings_for_run(build_parser().parse_args(["run"])))
    assert adapter.publish_hz == 10.0
    assert adapter.detail_hz == 5.0  # twice the full budget's ladder redraws
    low = adapter_config(settings_for_run(build_parser().parse_args(["run", "--low-bandwidth"])))
    assert low.detail_hz == 2 / BUDGETS[Bandwidth.LOW].ladder_s
    assert adapter.gpu is not None
    assert adapter.gpu.budget == VramBudget(
        kev_bytes=int(5.5 * GIB), laya_bytes=GIB, free_floor_bytes=VramBudget().free_floor_bytes
    )
    assert adapter.gpu.kev_pid_file == str(llama_server_pid_path())


def test_a_headless_run_uses_the_configured_journal_and_policy(config_dir, tmp_path):
    journal = tmp_path / "desk" / "journal.sqlite"
    config_file(
        config_dir,
        f'[trading]\njournal_path = "{journal}"\n[console]\nshutdown_policy = "keep"\n',
    )
    result = subprocess.run(
        [*CLI, "run", "--headless", "--duration", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[3],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )
    assert result.returncode == 0, result.stderr
    assert "2 s elapsed; resting orders cancelled, positions kept" in result.stderr  # keep
    assert journal.is_file()


def test_kev_serve_takes_the_kev_settings_with_its_flags_on_top(config_dir, tmp_path):
    model = tmp_path / "qwen.gguf"
    config_file(
        config_dir,
        f'[kev]\nurl = "http://127.0.0.1:9931"\nmodel_path = "{model}"\n'
        "context_size = 8192\nniceness = 5\n",
    )

    def serve(*flags: str):
        return kev_serve_config(
            build_parser().parse_args(["kev", "serve", *flags]), lambda: "tiny.gguf"
        )

    config = serve()
    assert (config.model, config.host, config.port) == (str(model), "127.0.0.1", 9931)
    assert (config.context_size, config.niceness, config.gpu_layers) == (8192, 5, 99)
    flagged = serve("--port", "8005", "--host", "0.0.0.0", "--ctx-size", "2048", "--nice", "0")
    assert (flagged.host, flagged.port, flagged.context_size, flagged.niceness) == (
        "0.0.0.0",
        8005,
        2048,
        0,
    )
    config_file(config_dir, "")
    assert serve().model == "tiny.gguf"  # neither the settings nor a flag name one


def test_kev_status_probes_the_configured_server(config_dir, capsys):
    url = f"http://127.0.0.1:{free_port()}"
    config_file(config_dir, f'[kev]\nurl = "{url}"\n')
    assert main(["kev", "status"]) == 1
    assert f"server   {url}: unreachable" in capsys.readouterr().out


def test_run_stops_on_a_bad_setting_before_starting_anything(config_dir, capsys):
    path = config_file(config_dir, '[trading]\nmode = "live"\n')
    assert main(["run", "--headless", "--duration", "1"]) == 2
    err = capsys.readouterr().err
    assert f"[trading] mode live ({path} line 2) trades real money: add --live" in err
    config_file(config_dir, "[console]\nrefresh_hz = 500\n")
    assert main(["run", "--headless", "--duration", "1"]) == 2
    assert "[console] refresh_hz = 500.0" in capsys.readouterr().err


def test_the_console_settings_match_the_console():
    assert tuple(policy.value for policy in ShutdownPolicy) == SHUTDOWN_POLICIES
    assert ConsoleSettings().shutdown_policy == LaunchOptions().exit_policy.value
    assert ConsoleSettings().refresh_hz == ConsoleConfig().refresh_hz == LaunchOptions().refresh_hz
