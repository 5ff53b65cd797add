"""The feature set the engine computes (engine/laya/features.py): its version and width, apart
so that a config can name them without loading the kernels. A model trained on another set is
refused."""

from __future__ import annotations

FEATURE_SET_VERSION = "laya-fs-4"
FEATURE_COUNT = 128
