"""Model conversion: ``quantize_dynamic`` swaps float layers for dynamically quantized
ones."""

from __future__ import annotations

import copy

from ...nn.modules.linear import Linear as FloatLinear
from ...nn.modules.module import Module
from ..nn.quantized.dynamic import Linear as DynamicLinear
from ._qtypes import qint8
from .qconfig import QConfig, default_dynamic_qconfig

__all__ = ["quantize_dynamic"]


def _dynamic_mapping() -> dict:
    return {FloatLinear: DynamicLinear}


def _spec_to_rules(qconfig_spec, mapping: dict) -> tuple:
    """({float type: qconfig}, {qualified name: qconfig}) from the user's spec."""
    if qconfig_spec is None:
        qconfig_spec = {FloatLinear}
    if isinstance(qconfig_spec, (set, frozenset, list, tuple)):
        qconfig_spec = dict.fromkeys(qconfig_spec, default_dynamic_qconfig)
    by_type, by_name = {}, {}
    for key, qconfig in qconfig_spec.items():
        if qconfig is not None and not isinstance(qconfig, QConfig):
            raise TypeError(f"quantize_dynamic: the qconfig for {key!r} must be a QConfig")
        if isinstance(key, str):
            by_name[key] = qconfig
        elif isinstance(key, type):
            if key not in mapping:
                raise NotImplementedError(
                    f"quantize_dynamic: {key.__name__} layers are not supported (ember "
                    f"quantizes {', '.join(t.__name__ for t in mapping)} dynamically)")
            by_type[key] = qconfig
        else:
            raise TypeError(f"quantize_dynamic: qconfig_spec keys must be module types or "
                            f"names, got {key!r}")
    return by_type, by_name


def _swap(module: Module, prefix: str, by_type: dict, by_name: dict, mapping: dict,
          inherited) -> None:
    """Swap the children of `module` whose qconfig (by name, from a named parent, or by
    type) is set and whose type has a quantized counterpart; recurse into the others."""
    for name, child in list(module.named_children()):
        qualified = f"{prefix}.{name}" if prefix else name
        named = by_name.get(qualified, inherited)
        qconfig = named if named is not None else by_type.get(type(child))
        if type(child) in mapping and qconfig is not None:
            setattr(module, name, mapping[type(child)].from_float(child, qconfig))
        else:
            _swap(child, qualified, by_type, by_name, mapping, named)


def quantize_dynamic(model: Module, qconfig_spec=None, dtype=qint8, mapping: dict | None = None,
                     inplace: bool = False) -> Module:
    """Replace the model's ``nn.Linear`` layers (at any depth) by dynamically quantized ones:
    int8 weights quantized once, activations quantized per call, float outputs.

    `qconfig_spec` selects the layers: a set of layer types (``{nn.Linear}``, the default),
    or a dict from types or qualified submodule names to QConfigs.  Only ``nn.Linear`` and
    ``dtype=ember.qint8`` are supported (PyTorch's default also converts recurrent layers;
    ember leaves them in float).  The result is for inference: it computes no gradients.
    """
    if dtype is not qint8:
        raise NotImplementedError(f"quantize_dynamic: dtype {dtype} is not supported (only "
                                  "ember.qint8)")
    mapping = _dynamic_mapping() if mapping is None else mapping
    by_type, by_name = _spec_to_rules(qconfig_spec, mapping)
    if not inplace:
        model = copy.deepcopy(model)
    top = by_name.get("", by_type.get(type(model)))
    if type(model) in mapping and top is not None:
        return mapping[type(model)].from_float(model, top)
    _swap(model, "", by_type, by_name, mapping, by_name.get(""))
    return model
