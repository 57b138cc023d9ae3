"""Losses as expr graphs (MNN: `MNN.nn.loss`): predictions and one-hot targets of shape [batch, classes]."""

from __future__ import annotations

from typing import Any

from mnnpy.expr import math as m
from mnnpy.expr import reduce as r
from mnnpy.expr.var import Var, to_var

_EPS = 1e-8


def cross_entropy(predicts: Any, onehot_targets: Any) -> Var:
    """mean over the batch of -sum(targets * log(predicts)) (MNN: `nn.loss.cross_entropy`)."""
    p, t = to_var(predicts), to_var(onehot_targets)
    per_sample = m.negative(r.reduce_sum(m.multiply(m.log(p), t), [1]))
    return r.reduce_mean(per_sample)


def kl(predicts: Any, onehot_targets: Any) -> Var:
    """mean over the batch of sum(t * (log t - log p)) (MNN: `nn.loss.kl`)."""
    p, t = to_var(predicts), to_var(onehot_targets)
    diff = m.subtract(m.log(m.add(t, _EPS)), m.log(m.add(p, _EPS)))
    return r.reduce_mean(r.reduce_sum(m.multiply(t, diff), [1]))


def mse(predicts: Any, onehot_targets: Any) -> Var:
    """mean over the batch of the summed squared error (MNN: `nn.loss.mse`)."""
    p, t = to_var(predicts), to_var(onehot_targets)
    return r.reduce_mean(r.reduce_sum(m.square(m.subtract(p, t)), [1]))


def mae(predicts: Any, onehot_targets: Any) -> Var:
    """mean over the batch of the summed absolute error (MNN: `nn.loss.mae`)."""
    p, t = to_var(predicts), to_var(onehot_targets)
    return r.reduce_mean(r.reduce_sum(m.abs(m.subtract(p, t)), [1]))


def hinge(predicts: Any, onehot_targets: Any) -> Var:
    """mean over the batch of sum(max(0, 1 - t * p)) (MNN: `nn.loss.hinge`)."""
    p, t = to_var(predicts), to_var(onehot_targets)
    return r.reduce_mean(r.reduce_sum(m.maximum(m.subtract(1.0, m.multiply(t, p)), 0.0), [1]))
