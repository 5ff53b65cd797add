"""A softmax network in numpy, fitted with weighted cross-entropy and Adam with decoupled
weight decay, and the standardisation and class weights it is fitted with."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.lab.evaluate import CLASS_COUNT


@dataclass(frozen=True, slots=True)
class MlpConfig:
    """A softmax network and how it is fitted; no hidden layers is a linear softmax
    (multinomial logistic regression)."""

    hidden_layers: tuple[int, ...] = (32, 16)
    epochs: int = 40
    batch_size: int = 512
    learning_rate: float = 1e-3
    weight_decay: float = 1.0
    """Decoupled (AdamW) decay per step, relative to the learning rate."""
    patience: int = 5
    """Epochs without a better validation loss before stopping."""
    seed: int = 0

    def __post_init__(self) -> None:
        if any(width < 1 for width in self.hidden_layers):
            raise ValueError(
                f"MlpConfig.hidden_layers must be positive widths, got {self.hidden_layers}"
            )
        for name in ("epochs", "batch_size", "patience"):
            if getattr(self, name) < 1:
                raise ValueError(f"MlpConfig.{name} must be >= 1, got {getattr(self, name)}")
        if not (math.isfinite(self.learning_rate) and self.learning_rate > 0):
            raise ValueError(f"MlpConfig.learning_rate must be > 0, got {self.learning_rate}")
        if not (math.isfinite(self.weight_decay) and self.weight_decay >= 0):
            raise ValueError(f"MlpConfig.weight_decay must be >= 0, got {self.weight_decay}")


def class_weights(
    labels: np.ndarray, power: float, weights: np.ndarray | None = None
) -> np.ndarray:
    """Per-class loss weights (N / (K * N_c)) ** power, normalised to mean 1 over frames;
    with `weights`, N and N_c are the frames' weights summed.

    power 1 fully balances the classes; lower powers temper the weight of very rare classes
    (EMERGENCY), whose few frames would otherwise dominate the gradient.
    """
    labels = np.asarray(labels, dtype=np.int64)
    frame_weights = np.ones(labels.shape) if weights is None else np.asarray(weights)
    counts = np.bincount(labels, weights=frame_weights, minlength=CLASS_COUNT)
    present = counts > 0
    result = np.zeros(CLASS_COUNT)
    result[present] = (counts.sum() / (present.sum() * counts[present])) ** power
    return result / np.average(result[labels], weights=frame_weights)


def standardisation(
    features: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(Weighted) mean and scale (std, 1 where a feature is constant) of the training
    features."""
    mean = np.average(features, axis=0, weights=weights).astype(np.float64)
    scale = np.sqrt(np.average((features - mean) ** 2, axis=0, weights=weights))
    scale[~(scale > 1e-12)] = 1.0
    return mean, scale


@dataclass(frozen=True, slots=True, eq=False)
class MlpFit:
    """A fitted network: (weight [in, out], bias [out]) per layer, ReLU between, softmax
    last; `best_epoch` is the epoch kept."""

    layers: tuple[tuple[np.ndarray, np.ndarray], ...]
    best_epoch: int

    def predict_proba(self, standardised: np.ndarray) -> np.ndarray:
        return _forward(self.layers, np.asarray(standardised, dtype=np.float32))[-1]

    @property
    def parameter_count(self) -> int:
        return sum(weight.size + bias.size for weight, bias in self.layers)


def _forward(
    layers: tuple[tuple[np.ndarray, np.ndarray], ...] | list[list[np.ndarray]], x: np.ndarray
) -> list[np.ndarray]:
    """Activations of every layer, the input first and the softmax probabilities last."""
    activations = [x]
    for index, (weight, bias) in enumerate(layers):
        z = activations[-1] @ weight + bias
        if index < len(layers) - 1:
            activations.append(np.maximum(z, 0.0))
        else:
            z = z - z.max(axis=1, keepdims=True)
            exp = np.exp(z)
            activations.append(exp / exp.sum(axis=1, keepdims=True))
    return activations


def _weighted_loss(probabilities: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> float:
    picked = probabilities[np.arange(labels.size), labels]
    return float(-(weights * np.log(np.maximum(picked, 1e-12))).sum() / weights.sum())


def fit_mlp(
    fit_x: np.ndarray,
    fit_y: np.ndarray,
    fit_w: np.ndarray,
    validation: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    config: MlpConfig,
    on_epoch: Callable[[int, float], None] | None = None,
    classes: int = CLASS_COUNT,
) -> MlpFit:
    """Fit on standardised features with per-frame loss weights and labels 0..classes-1.

    With `validation` (features, labels, weights), keep the epoch with the lowest weighted
    validation loss, stopping after `patience` epochs without one; without, run all
    `config.epochs`. `on_epoch(epoch, loss)` reports progress (the validation loss, else the
    last batch's)."""
    rng = np.random.default_rng(config.seed)
    widths = [fit_x.shape[1], *config.hidden_layers, classes]
    params = [
        [
            (rng.standard_normal((fan_in, fan_out)) * math.sqrt(2.0 / fan_in)).astype(np.float32),
            np.zeros(fan_out, dtype=np.float32),
        ]
        for fan_in, fan_out in itertools.pairwise(widths)
    ]
    moments = [[np.zeros_like(p) for p in layer] for layer in params]
    squares = [[np.zeros_like(p) for p in layer] for layer in params]
    beta1, beta2, epsilon = 0.9, 0.999, 1e-8
    fit_x = np.asarray(fit_x, dtype=np.float32)
    fit_w = np.asarray(fit_w, dtype=np.float32)
    step = 0
    best_loss, best_epoch = math.inf, 0
    best_params = [[p.copy() for p in layer] for layer in params]
    for epoch in range(1, config.epochs + 1):
        order = rng.permutation(fit_y.size)
        batch_loss = 0.0
        for start in range(0, order.size, config.batch_size):
            rows = order[start : start + config.batch_size]
            activations = _forward(params, fit_x[rows])
            weights = fit_w[rows]
            batch_loss = _weighted_loss(activations[-1], fit_y[rows], weights)
            delta = activations[-1].copy()
            delta[np.arange(rows.size), fit_y[rows]] -= 1.0
            delta *= (weights / weights.sum())[:, None]
            step += 1
            correction1 = 1.0 - beta1**step
            correction2 = 1.0 - beta2**step
            for index in range(len(params) - 1, -1, -1):
                weight = params[index][0]
                gradients = (activations[index].T @ delta, delta.sum(axis=0))
                if index:
                    delta = (delta @ weight.T) * (activations[index] > 0)
                for k, gradient in enumerate(gradients):
                    moments[index][k] = beta1 * moments[index][k] + (1 - beta1) * gradient
                    squares[index][k] = beta2 * squares[index][k] + (1 - beta2) * gradient**2
                    update = (moments[index][k] / correction1) / (
                        np.sqrt(squares[index][k] / correction2) + epsilon
                    )
                    params[index][k] -= config.learning_rate * update
                weight -= config.learning_rate * config.weight_decay * weight
        if validation is None:
            if on_epoch is not None:
                on_epoch(epoch, batch_loss)
            best_epoch = epoch
            continue
        validation_x, validation_y, validation_w = validation
        loss = _weighted_loss(
            _forward(params, np.asarray(validation_x, np.float32))[-1], validation_y, validation_w
        )
        if on_epoch is not None:
            on_epoch(epoch, loss)
        if loss < best_loss - 1e-6:
            best_loss, best_epoch = loss, epoch
            best_params = [[p.copy() for p in layer] for layer in params]
        elif epoch - best_epoch >= config.patience:
            break
    kept = params if validation is None else best_params
    return MlpFit(tuple((weight, bias) for weight, bias in kept), best_epoch)
