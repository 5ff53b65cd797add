"""The error table covers the documented codes and never raises."""

from __future__ import annotations

import pytest

from engine.bitget.errors import KNOWN_ERRORS, describe_error, lookup_error

DOCUMENTED_CODES = (
    # Websocket, section 1.
    "30001", "30002", "30003", "30004", "30005", "30006", "30007",
    "30011", "30012", "30013", "30014", "30015", "30016",
    # REST, section 4 and 6.
    "429", "40001", "40002", "40003", "40005", "40006", "40008", "40009", "40011", "40012",
    "40014", "40018", "40037", "40085", "40099", "40762", "40774", "40757", "43001", "40768",
    "40109", "22001", "43004", "22002", "43012", "45110", "45111", "45115", "40306", "43118",
    "45001", "40725", "40808", "40015", "22035", "22030", "40304", "40305",
)  # fmt: skip


@pytest.mark.parametrize("code", DOCUMENTED_CODES)
def test_every_documented_code_has_an_explanation(code: str) -> None:
    assert code in KNOWN_ERRORS
    text = describe_error(code)
    assert text.startswith(f"{code}: ")
    assert len(text) > len(code) + 10


def test_key_operator_messages_name_the_fix() -> None:
    assert "Unified Trading Account" in describe_error("40085")
    assert "Classic" in describe_error("40085")
    assert "paptrading" in describe_error(40099)
    assert "30 s" in describe_error("40008")
    assert "clock" in describe_error("40008")


def test_numeric_websocket_codes_are_found() -> None:
    known = lookup_error(30001)
    assert known is not None
    assert known.code == "30001"


@pytest.mark.parametrize("code", ["99999", 12, None, "", "  ", object(), 3.5, b"40009"])
def test_unknown_or_odd_codes_are_described_without_raising(code: object) -> None:
    text = describe_error(code)
    assert isinstance(text, str)
    assert "unknown" in text


def test_code_whose_str_raises_is_still_described() -> None:
    class Hostile:
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert "unknown" in describe_error(Hostile())
