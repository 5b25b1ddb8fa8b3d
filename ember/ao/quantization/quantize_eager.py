"""Eager-mode static quantization and quantization-aware training: ``prepare`` attaches
observers to the layers a qconfig selects, ``prepare_qat`` also swaps Linear layers for
their fake-quantized QAT versions, and ``convert`` replaces observed layers by quantized
ones built from what the observers saw."""

from __future__ import annotations

import copy
import warnings

from ...nn.modules.activation import ReLU as FloatReLU
from ...nn.modules.linear import Linear as FloatLinear
from ...nn.modules.module import Module
from ..nn import qat
from ..nn import quantized as nnq
from .stubs import DeQuantStub, QuantStub

__all__ = ["propagate_qconfig_", "prepare", "prepare_qat", "convert", "swap_module",
           "get_default_static_quant_module_mappings", "get_default_qat_module_mappings"]


def get_default_static_quant_module_mappings() -> dict:
    """{float or QAT module type: quantized module type} used by ``convert``."""
    return {QuantStub: nnq.Quantize, DeQuantStub: nnq.DeQuantize, FloatLinear: nnq.Linear,
            qat.Linear: nnq.Linear, FloatReLU: nnq.ReLU}


def get_default_qat_module_mappings() -> dict:
    """{float module type: QAT module type} used by ``prepare_qat``."""
    return {FloatLinear: qat.Linear}


def _observed_types() -> tuple:
    """Leaf layers whose output ``prepare`` observes.  (PyTorch observes no ReLU: a ReLU
    on a quantized tensor keeps its input's parameters; nor the DeQuantStub.)"""
    return (QuantStub, FloatLinear, qat.Linear)


def propagate_qconfig_(module: Module, qconfig_dict: dict | None = None) -> None:
    """Give every submodule a ``qconfig`` attribute, in place: its own if it has one (even
    None, which opts it out), else the entry of `qconfig_dict` for its qualified name or
    type, else its parent's."""
    qconfig_dict = qconfig_dict or {}

    def visit(mod: Module, parent_qconfig, prefix: str) -> None:
        qconfig = qconfig_dict.get(type(mod), parent_qconfig)
        qconfig = qconfig_dict.get(prefix, qconfig)
        qconfig = getattr(mod, "qconfig", qconfig)
        mod.qconfig = qconfig
        for name, child in mod.named_children():
            visit(child, qconfig, f"{prefix}.{name}" if prefix else name)

    visit(module, None, "")


def _observer_forward_hook(module: Module, args, output):
    """Run the module's output through its observer (or fake-quantize module)."""
    return module.activation_post_process(output)


def _add_observers(module: Module) -> None:
    observed = _observed_types()
    for child in module.children():
        _add_observers(child)
    if isinstance(module, observed) and getattr(module, "qconfig", None) is not None \
            and not hasattr(module, "activation_post_process"):
        module.add_module("activation_post_process", module.qconfig.activation())
        # first in the hook list: user hooks see the observed (fake-quantized) output
        module.register_forward_hook(_observer_forward_hook, prepend=True)


def prepare(model: Module, inplace: bool = False) -> Module:
    """Ready a float model for calibration: propagate ``qconfig`` attributes down the tree
    and give each QuantStub and ``nn.Linear`` with a qconfig an ``activation_post_process``
    (made by ``qconfig.activation()``) that sees the layer's output through a forward hook.
    Run representative data through the result, then ``convert`` it."""
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model)
    if not any(getattr(m, "qconfig", None) is not None for m in model.modules()):
        warnings.warn("None of the submodule got qconfig applied. Make sure you passed correct "
                      "configuration by assigning the `.qconfig` attribute directly on "
                      "submodules", stacklevel=2)
    _add_observers(model)
    return model


def prepare_qat(model: Module, mapping: dict | None = None, inplace: bool = False) -> Module:
    """Ready a float model (in training mode) for quantization-aware training: swap each
    ``nn.Linear`` with a qconfig for ``ember.ao.nn.qat.Linear`` (weights fake-quantized by
    ``qconfig.weight()``) and attach ``qconfig.activation()`` (a FakeQuantize) to the
    outputs as ``prepare`` does.  Train it, call ``.eval()``, then ``convert``."""
    if not model.training:
        raise RuntimeError("prepare_qat only works on models in training mode")
    if not inplace:
        model = copy.deepcopy(model)
    mapping = get_default_qat_module_mappings() if mapping is None else mapping
    propagate_qconfig_(model)
    _convert(model, mapping)
    return prepare(model, inplace=True)


def swap_module(mod: Module, mapping: dict) -> Module:
    """The module that replaces `mod`: ``mapping[type(mod)].from_float(mod)`` when `mod` has
    a qconfig and its type is mapped (its forward hooks move over, except the observer's),
    else `mod` itself."""
    if getattr(mod, "qconfig", None) is None or type(mod) not in mapping:
        return mod
    new = mapping[type(mod)].from_float(mod)
    for hook in mod._forward_pre_hooks.values():
        new.register_forward_pre_hook(hook)
    for hook in mod._forward_hooks.values():
        if hook is not _observer_forward_hook:
            new.register_forward_hook(hook)
    return new


def _convert(module: Module, mapping: dict) -> None:
    for name, child in list(module.named_children()):
        _convert(child, mapping)
        new = swap_module(child, mapping)
        if new is not child:
            setattr(module, name, new)


def _remove_qconfig(module: Module) -> None:
    """Drop the ``qconfig`` attributes, leftover observers and their hooks."""
    for child in module.children():
        _remove_qconfig(child)
    if "qconfig" in module.__dict__:
        del module.qconfig
    if "activation_post_process" in module._modules:
        del module.activation_post_process
        for hook_id, hook in list(module._forward_hooks.items()):
            if hook is _observer_forward_hook:
                del module._forward_hooks[hook_id]
                module._forward_hooks_with_kwargs.pop(hook_id, None)
                module._forward_hooks_always_called.pop(hook_id, None)


def convert(module: Module, mapping: dict | None = None, inplace: bool = False,
            remove_qconfig: bool = True) -> Module:
    """Swap the observed (or QAT) submodules for quantized ones: QuantStub -> Quantize,
    DeQuantStub -> DeQuantize, nn.Linear and qat.Linear -> ``ember.ao.nn.quantized.Linear``,
    nn.ReLU -> ``ember.ao.nn.quantized.ReLU``.  Only submodules with a qconfig (set by
    ``prepare``) are swapped; the top module itself is not.  Other layers stay in float:
    they must not be given quantized tensors (put a DeQuantStub before them).  Inference
    only."""
    if not inplace:
        module = copy.deepcopy(module)
    _convert(module, get_default_static_quant_module_mappings() if mapping is None
             else mapping)
    if remove_qconfig:
        _remove_qconfig(module)
    return module
