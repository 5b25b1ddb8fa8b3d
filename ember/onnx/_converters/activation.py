"""Activations: relu and its relatives, the smooth ones (gelu, silu, mish, softplus,
elu/selu/celu), the piecewise linear ones, softmax and log_softmax.

Where ONNX has the function as an op (Relu, LeakyRelu, Elu, Selu, Celu, HardSigmoid,
HardSwish, Softplus, Shrink, Softmax, LogSoftmax; Gelu from opset 20, Mish from 18)
it is used; otherwise the function is written out with elementary ops.
"""

from __future__ import annotations

import math

from ...nn.modules import activation as act_modules
from ...ops import activation as act
from ...ops import elementwise as el
from ...ops import masked_softmax
from .._convert import Call


def _scalar(c: Call, value) -> str:
    return c.const(value, c.dtype(0))


def convert_relu(c: Call) -> None:
    c.done(c.op("Relu", c.input(0)))


def convert_softmax(c: Call) -> None:
    c.done(c.op("Softmax", c.input(0), axis=int(c.arg(1))))


def convert_masked_softmax(c: Call) -> None:
    """softmax(where(mask, value, x * scale)) over the last dim (one node in ember)."""
    x = c.input(0)
    scale, value = float(c.arg(1)), float(c.arg(2))
    dtype = c.out_dtype()
    scaled = x if scale == 1.0 else c.op("Mul", x, c.const(scale, dtype))
    filled = c.op("Where", c.param_input("mask"), c.const(value, dtype), scaled)
    c.done(c.op("Softmax", filled, axis=int(c.param("dim"))))


def convert_log_softmax(c: Call) -> None:
    c.done(c.op("LogSoftmax", c.input(0), axis=int(c.arg(1))))


def convert_gelu(c: Call) -> None:
    x = c.input(0)
    approximate = c.arg(1, "none")
    if c.opset >= 20:
        c.done(c.op("Gelu", x, approximate=approximate))
        return
    if approximate == "tanh":
        cube = c.op("Mul", c.op("Mul", x, x), x)
        inner = c.op("Add", x, c.op("Mul", cube, _scalar(c, 0.044715)))
        t = c.op("Tanh", c.op("Mul", inner, _scalar(c, math.sqrt(2.0 / math.pi))))
    else:
        t = c.op("Erf", c.op("Mul", x, _scalar(c, 1.0 / math.sqrt(2.0))))
    half_x = c.op("Mul", x, _scalar(c, 0.5))
    c.done(c.op("Mul", half_x, c.op("Add", t, _scalar(c, 1.0))))


def convert_silu(c: Call) -> None:
    x = c.input(0)
    c.done(c.op("Mul", x, c.op("Sigmoid", x)))


def convert_mish(c: Call) -> None:
    x = c.input(0)
    if c.opset >= 18:
        c.done(c.op("Mish", x))
        return
    c.done(c.op("Mul", x, c.op("Tanh", c.op("Softplus", x))))


def convert_softplus(c: Call) -> None:
    """``log(1 + exp(beta x)) / beta``, and x itself where ``beta x > threshold``."""
    x = c.input(0)
    beta, threshold = c.arg(1, 1.0), c.arg(2, 20.0)
    z = x if beta == 1 else c.op("Mul", x, _scalar(c, beta))
    soft = c.op("Softplus", z)
    if beta != 1:
        soft = c.op("Div", soft, _scalar(c, beta))
    above = c.op("Greater", z, _scalar(c, threshold))
    c.done(c.op("Where", above, x, soft))


def convert_glu(c: Call) -> None:
    """``a * sigmoid(b)`` for the halves of the input along `dim`: Split, Sigmoid, Mul."""
    dim = int(c.param("dim"))
    half = c.shape(0)[dim] // 2
    a, b = c.op("Split", c.input(0), c.ints([half, half]), axis=dim, outputs=2)
    c.done(c.op("Mul", a, c.op("Sigmoid", b)))


def convert_log_sigmoid(c: Call) -> None:
    x = c.input(0)
    c.done(c.op("Neg", c.op("Softplus", c.op("Neg", x))))


def convert_elu(c: Call) -> None:
    """One Function serves elu, selu and celu (alpha, scale, input_scale)."""
    x = c.input(0)
    alpha, scale, input_scale = c.arg(1), c.arg(2), c.arg(3)
    if scale == 1 and input_scale == 1:
        c.done(c.op("Elu", x, alpha=float(alpha)))
    elif input_scale == 1 and math.isclose(alpha, act.SELU_ALPHA) and math.isclose(
            scale, act.SELU_SCALE):
        c.done(c.op("Selu", x, alpha=float(alpha), gamma=float(scale)))
    elif scale == 1 and math.isclose(input_scale * alpha, 1.0):
        c.done(c.op("Celu", x, alpha=float(alpha)))
    else:
        neg = c.op("Sub", c.op("Exp", c.op("Mul", x, _scalar(c, input_scale))),
                   _scalar(c, 1.0))
        neg = c.op("Mul", neg, _scalar(c, scale * alpha))
        pos = c.op("Mul", x, _scalar(c, scale))
        c.done(c.op("Where", c.op("Greater", x, _scalar(c, 0.0)), pos, neg))


def convert_leaky_relu(c: Call) -> None:
    c.done(c.op("LeakyRelu", c.input(0), alpha=float(c.arg(1))))


def convert_hardtanh(c: Call) -> None:
    c.done(c.op("Clip", c.input(0), _scalar(c, c.arg(1)), _scalar(c, c.arg(2))))


def convert_threshold(c: Call) -> None:
    x = c.input(0)
    above = c.op("Greater", x, _scalar(c, c.arg(1)))
    c.done(c.op("Where", above, x, _scalar(c, c.arg(2))))


def convert_hardsigmoid(c: Call) -> None:
    c.done(c.op("HardSigmoid", c.input(0), alpha=1.0 / 6, beta=0.5))


def convert_hardswish(c: Call) -> None:
    x = c.input(0)
    if c.opset >= 14:
        c.done(c.op("HardSwish", x))
        return
    c.done(c.op("Mul", x, c.op("HardSigmoid", x, alpha=1.0 / 6, beta=0.5)))


def convert_softshrink(c: Call) -> None:
    lambd = float(c.arg(1))
    c.done(c.op("Shrink", c.input(0), lambd=lambd, bias=lambd))


def convert_hardshrink(c: Call) -> None:
    c.done(c.op("Shrink", c.input(0), lambd=float(c.arg(1)), bias=0.0))


def _accepts_prelu(module, args, kwargs) -> bool:
    return len(args) == 1 and not kwargs


def convert_prelu_module(c: Call) -> None:
    """nn.PReLU: one PRelu node, its slope shaped to broadcast over dim 1."""
    weight = c.tensor(c.module.weight)
    ndim = len(c.shape(0))
    n = c.module.weight.numel()
    if n > 1 and ndim >= 2:
        weight = c.reshape(weight, [n] + [1] * (ndim - 2))
    c.done(c.op("PRelu", c.input(0), weight))


CONVERTERS = {
    el.Relu: convert_relu,
    act.Softmax: convert_softmax, act.LogSoftmax: convert_log_softmax,
    masked_softmax.ScaledMaskedSoftmax: convert_masked_softmax,
    act.Gelu: convert_gelu, act.Silu: convert_silu, act.Mish: convert_mish,
    act.Softplus: convert_softplus, act.LogSigmoid: convert_log_sigmoid, act.Glu: convert_glu,
    act.Elu: convert_elu, act.Celu: convert_elu, act.LeakyRelu: convert_leaky_relu,
    act.Hardtanh: convert_hardtanh, act.Threshold: convert_threshold,
    act.Hardsigmoid: convert_hardsigmoid, act.Hardswish: convert_hardswish,
    act.Softshrink: convert_softshrink, act.Hardshrink: convert_hardshrink,
}

MODULE_CONVERTERS = {act_modules.PReLU: (_accepts_prelu, convert_prelu_module)}
