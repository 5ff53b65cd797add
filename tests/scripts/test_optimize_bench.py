"""scripts/optimize-bench: the trials a minute of the real `hft-console optimize`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.recordings import shared_spot

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "optimize-bench"


def test_it_prints_the_trials_a_minute_of_each_jobs_value():
    command = [sys.executable, str(SCRIPT), str(shared_spot()), "--trials", "1", "--jobs", "1"]
    done = subprocess.run([*command, "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    assert run["jobs"] == 1 and run["trials_run"] == 1
    assert run["trials_per_minute"] == run["trials_run"] / run["wall_s"] * 60 > 0
