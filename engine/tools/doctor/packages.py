"""Python and the packages hft-console requires."""

from __future__ import annotations

import platform
import re
import sys
from importlib import metadata
from pathlib import Path

import engine
from engine.tools.doctor.report import CheckResult, CheckStatus

MINIMUM_PYTHON = (3, 11)
ONNXRUNTIME_DISTRIBUTIONS = (
    "onnxruntime",
    "onnxruntime-gpu",
    "onnxruntime-directml",
    "onnxruntime-openvino",
    "onnxruntime-training",
)
"""Wheels that all install the same `onnxruntime` module: with two, the last one wins."""
SOURCE_ROOT = Path(engine.__file__).resolve().parent.parent
"""The folder holding the `engine` package this doctor was imported from."""


def check_python() -> CheckResult:
    version = ".".join(map(str, sys.version_info[:3]))
    where = sys.executable or "an embedded interpreter"
    environment = "a virtual environment" if sys.prefix != sys.base_prefix else "no venv"
    detail = f"{platform.python_implementation()} {version} at {where} ({environment})"
    if sys.version_info[:2] < MINIMUM_PYTHON:
        wanted = ".".join(map(str, MINIMUM_PYTHON))
        return CheckResult(
            "python",
            CheckStatus.FAIL,
            f"{detail}: the engine needs Python >= {wanted}",
            f"install Python {wanted} or newer and reinstall hft-console with it",
        )
    return CheckResult("python", CheckStatus.OK, detail)


def installed_version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _requirements(distribution: str) -> list[tuple[str, str]]:
    """(name, requirement) for each requirement of `distribution` outside its extras."""
    requirements = []
    for line in metadata.requires(distribution) or []:
        requirement, _, marker = line.partition(";")
        if "extra" in marker:
            continue
        name = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
        if name:
            requirements.append((name.group(0), requirement.strip()))
    return requirements


def _satisfies(requirement: str, version: str) -> bool | None:
    """Whether `version` meets `requirement`'s specifier; None when that cannot be judged."""
    try:
        from packaging.requirements import InvalidRequirement, Requirement
        from packaging.version import InvalidVersion
    except ImportError:
        return None
    try:
        return Requirement(requirement).specifier.contains(version, prereleases=True)
    except (InvalidRequirement, InvalidVersion):
        return None


def check_packages() -> CheckResult:
    """hft-console's own requirements (onnxruntime has a check of its own): installed, and at
    versions its metadata accepts."""
    own = installed_version("hft-console")
    if own is None:
        return CheckResult(
            "packages",
            CheckStatus.WARN,
            f"hft-console is not installed as a package (running from "
            f"{SOURCE_ROOT}); its requirements cannot be read",
            "pip install . (or pip install -e '.[dev]' for development)",
        )
    found, missing, mismatched = [], [], []
    for name, requirement in _requirements("hft-console"):
        if name.lower().replace("_", "-") in ONNXRUNTIME_DISTRIBUTIONS:
            continue
        version = installed_version(name)
        if version is None:
            missing.append(requirement)
        elif _satisfies(requirement, version) is False:
            mismatched.append(f"{name} {version} (wants {requirement})")
        else:
            found.append(f"{name} {version}")
    listed = f"hft-console {own}; {', '.join(found)}"
    if missing or mismatched:
        problems = [f"missing {', '.join(missing)}"] if missing else []
        problems += [f"wrong version: {', '.join(mismatched)}"] if mismatched else []
        return CheckResult(
            "packages",
            CheckStatus.FAIL,
            f"{'; '.join(problems)}. Installed: {listed}",
            f"pip install {' '.join(repr(item) for item in missing) or '--upgrade hft-console'} "
            "(or reinstall hft-console, which pulls in what it needs)",
        )
    shim = installed_version("pynvml")
    if shim is not None:
        return CheckResult(
            "packages",
            CheckStatus.WARN,
            f"{listed}; also pynvml {shim}, a deprecated shim that warns on every import of pynvml",
            "pip uninstall -y pynvml (nvidia-ml-py provides the pynvml module)",
        )
    return CheckResult("packages", CheckStatus.OK, listed)
