"""Laya's lab: labels, datasets, training, evaluation, folds and backtest savings."""
