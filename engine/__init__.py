"""Headless trading engine: market data, Laya, Kev, risk and execution. Never imports the UI."""

import copyreg
from types import MappingProxyType


def _read_only(mapping: dict[object, object]) -> MappingProxyType[object, object]:
    return MappingProxyType(mapping)


# Frozen configs and views hold read-only mappings, which pickle cannot take on its own: the
# console's engine process and a backtest's worker processes receive them pickled.
copyreg.pickle(MappingProxyType, lambda proxy: (_read_only, (dict(proxy),)))
