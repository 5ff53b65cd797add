"""Kev's fixed system prompt: what it tells the model about the beta key."""

from __future__ import annotations

import pytest

from engine.kev.command import KevCommandSpec
from engine.kev.context import system_prompt


@pytest.mark.parametrize(
    ("band", "example"),
    [((80, 125), 100), ((120, 150), 120), ((50, 90), 90), ((0, 1000), 100)],
)
def test_the_examples_keep_a_beta_of_one_where_the_band_holds_it(band, example):
    """A model that copies an example asks for beta 1 (the default beta) or the band's nearest
    end, never a midpoint that would move every symbol's beta."""
    prompt = system_prompt(KevCommandSpec(beta_pct=band))
    assert f"beta: the flagged symbol's beta percent, {band[0]}-{band[1]};" in prompt
    assert prompt.count(f'"beta":{example},') == 2
