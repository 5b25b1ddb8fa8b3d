"""Reference optimizers in plain float64 NumPy, written from the published update rules.

Each rule is a function ``rule(x, g, s, **options)`` that updates one parameter vector
`x` (a float64 array, modified in place) given its gradient `g`, keeping whatever it
remembers between steps in the dict `s` (empty at the first step).  The code follows
the algorithms as the papers and PyTorch's documentation state them, written for
clarity, not speed; the optimizers in ember.optim are tested against these.
"""

from __future__ import annotations

import math

import numpy as np


def _direction(x, g, s, weight_decay=0.0, maximize=False):
    """The gradient the rule descends: sign-flipped for maximize, plus the L2 term."""
    d = -g if maximize else g.copy()
    return d + weight_decay * x if weight_decay else d


def _tick(s):
    s["t"] = s.get("t", 0) + 1
    return s["t"]


def sgd(x, g, s, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
        maximize=False):
    d = _direction(x, g, s, weight_decay, maximize)
    if momentum:
        if "buf" not in s:
            s["buf"] = d.copy()  # the first step starts the buffer at the gradient
        else:
            s["buf"] = momentum * s["buf"] + (1 - dampening) * d
        d = d + momentum * s["buf"] if nesterov else s["buf"]
    x -= lr * d


def adam(x, g, s, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
         maximize=False, decoupled_weight_decay=False):
    b1, b2 = betas
    t = _tick(s)
    if decoupled_weight_decay:
        x *= 1 - lr * weight_decay
        d = _direction(x, g, s, 0.0, maximize)
    else:
        d = _direction(x, g, s, weight_decay, maximize)
    s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * d
    s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * d * d
    v = s["v"]
    if amsgrad:
        s["vmax"] = np.maximum(s.get("vmax", 0.0), v)
        v = s["vmax"]
    m_hat = s["m"] / (1 - b1 ** t)
    v_hat = v / (1 - b2 ** t)
    x -= lr * m_hat / (np.sqrt(v_hat) + eps)


def adamw(x, g, s, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False,
          maximize=False):
    adam(x, g, s, lr, betas, eps, weight_decay, amsgrad, maximize, decoupled_weight_decay=True)


def adamax(x, g, s, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, maximize=False):
    b1, b2 = betas
    t = _tick(s)
    d = _direction(x, g, s, weight_decay, maximize)
    s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * d
    s["u"] = np.maximum(b2 * s.get("u", 0.0), np.abs(d) + eps)
    x -= lr / (1 - b1 ** t) * s["m"] / s["u"]


def nadam(x, g, s, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
          momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    t = _tick(s)
    if decoupled_weight_decay:
        x *= 1 - lr * weight_decay
        d = _direction(x, g, s, 0.0, maximize)
    else:
        d = _direction(x, g, s, weight_decay, maximize)

    def mu(step):  # the momentum schedule of Dozat's paper
        return b1 * (1 - 0.5 * 0.96 ** (step * momentum_decay))

    s["mu_prod"] = s.get("mu_prod", 1.0) * mu(t)
    mu_prod_next = s["mu_prod"] * mu(t + 1)
    s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * d
    s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * d * d
    v_hat = s["v"] / (1 - b2 ** t)
    lookahead = (mu(t + 1) * s["m"] / (1 - mu_prod_next)
                 + (1 - mu(t)) * d / (1 - s["mu_prod"]))
    x -= lr * lookahead / (np.sqrt(v_hat) + eps)


def radam(x, g, s, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
          decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    t = _tick(s)
    if decoupled_weight_decay:
        x *= 1 - lr * weight_decay
        d = _direction(x, g, s, 0.0, maximize)
    else:
        d = _direction(x, g, s, weight_decay, maximize)
    s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * d
    s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * d * d
    m_hat = s["m"] / (1 - b1 ** t)
    rho_inf = 2 / (1 - b2) - 1
    rho = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
    if rho > 5:
        # variance is tractable: adaptive step with the rectification factor
        rect = math.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
        adaptive = math.sqrt(1 - b2 ** t) / (np.sqrt(s["v"]) + eps)
        x -= lr * m_hat * rect * adaptive
    else:
        x -= lr * m_hat


def rmsprop(x, g, s, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
            centered=False, maximize=False):
    _tick(s)
    d = _direction(x, g, s, weight_decay, maximize)
    s["sq"] = alpha * s.get("sq", 0.0) + (1 - alpha) * d * d
    mean_square = s["sq"]
    if centered:
        s["mean"] = alpha * s.get("mean", 0.0) + (1 - alpha) * d
        mean_square = mean_square - s["mean"] ** 2
    scaled = d / (np.sqrt(mean_square) + eps)
    if momentum > 0:
        s["buf"] = momentum * s.get("buf", 0.0) + scaled
        x -= lr * s["buf"]
    else:
        x -= lr * scaled


def adagrad(x, g, s, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0,
            eps=1e-10, maximize=False):
    t = _tick(s)
    d = _direction(x, g, s, weight_decay, maximize)
    s["sum"] = s.get("sum", initial_accumulator_value) + d * d
    rate = lr / (1 + (t - 1) * lr_decay)
    x -= rate * d / (np.sqrt(s["sum"]) + eps)


def adadelta(x, g, s, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False):
    _tick(s)
    d = _direction(x, g, s, weight_decay, maximize)
    s["v"] = rho * s.get("v", 0.0) + (1 - rho) * d * d
    delta = np.sqrt(s.get("u", 0.0) + eps) / np.sqrt(s["v"] + eps) * d
    s["u"] = rho * s.get("u", 0.0) + (1 - rho) * delta * delta
    x -= lr * delta


def asgd(x, g, s, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0, maximize=False):
    t = _tick(s)
    d = _direction(x, g, s, weight_decay, maximize)
    eta = s.get("eta", lr)
    mu = s.get("mu", 1.0)
    x *= 1 - lambd * eta
    x -= eta * d
    # the averaged iterate: a copy while mu is 1, a running mean once averaging starts
    s["ax"] = x.copy() if mu == 1 else s["ax"] + mu * (x - s["ax"])
    s["eta"] = lr / (1 + lambd * lr * t) ** alpha
    s["mu"] = 1 / max(1, t - t0)


def rprop(x, g, s, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    _tick(s)
    d = -g if maximize else g.copy()
    prev = s.get("prev", np.zeros_like(x))
    size = s.get("size", np.full_like(x, lr))
    agreement = d * prev
    size = np.where(agreement > 0, size * etas[1], np.where(agreement < 0, size * etas[0], size))
    size = np.clip(size, *step_sizes)
    d = np.where(agreement < 0, 0.0, d)  # no move where the sign flipped
    x -= np.sign(d) * size
    s["prev"], s["size"] = d, size


def sparse_adam(x, g_rows, rows, s, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    """SparseAdam on a 2-D parameter whose gradient only has the given rows."""
    b1, b2 = betas
    t = _tick(s)
    m = s.setdefault("m", np.zeros_like(x))
    v = s.setdefault("v", np.zeros_like(x))
    m[rows] = b1 * m[rows] + (1 - b1) * g_rows
    v[rows] = b2 * v[rows] + (1 - b2) * g_rows ** 2
    x[rows] -= lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m[rows] / (np.sqrt(v[rows]) + eps)


RULES = {
    "SGD": sgd, "Adam": adam, "AdamW": adamw, "Adamax": adamax, "NAdam": nadam,
    "RAdam": radam, "RMSprop": rmsprop, "Adagrad": adagrad, "Adadelta": adadelta,
    "ASGD": asgd, "Rprop": rprop,
}
