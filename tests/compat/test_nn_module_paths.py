"""PyTorch's module paths under ``nn.modules`` hold the same classes in ember.

Programs import layers from where PyTorch defines them (``from torch.nn.modules.activation
import MultiheadAttention``, ``from torch.nn.modules.batchnorm import _BatchNorm``,
``from torch.nn.modules.utils import _pair``).  The hand-written table below runs without
PyTorch; the parity test walks PyTorch's own ``nn.modules`` package when it is installed.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import ember.nn as nn

# path under nn.modules -> classes PyTorch defines there (public ones, and the private bases
# that user code subclasses)
PATHS = {
    "activation": ["ReLU", "GELU", "Softmax", "PReLU", "Threshold", "MultiheadAttention"],
    "adaptive": ["AdaptiveLogSoftmaxWithLoss"],
    "batchnorm": ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d",
                  "LazyBatchNorm2d", "LazyBatchNorm3d", "SyncBatchNorm", "_BatchNorm",
                  "_NormBase"],
    "channelshuffle": ["ChannelShuffle"],
    "container": ["Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
                  "ParameterDict"],
    "conv": ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
             "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
             "LazyConvTranspose2d", "LazyConvTranspose3d", "_ConvNd"],
    "distance": ["PairwiseDistance", "CosineSimilarity"],
    "dropout": ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                "FeatureAlphaDropout", "_DropoutNd"],
    "flatten": ["Flatten", "Unflatten"],
    "fold": ["Fold", "Unfold"],
    "instancenorm": ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
                     "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
                     "_InstanceNorm"],
    "lazy": ["LazyModuleMixin"],
    "linear": ["Identity", "Linear", "Bilinear", "LazyLinear",
               "NonDynamicallyQuantizableLinear"],
    "linear_cross_entropy_options": ["LinearCrossEntropyOptions"],
    "loss": ["L1Loss", "MSELoss", "NLLLoss", "NLLLoss2d", "CrossEntropyLoss", "BCELoss",
             "CTCLoss", "LinearCrossEntropyLoss", "_Loss", "_WeightedLoss"],
    "module": ["Module"],
    "normalization": ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm",
                      "CrossMapLRN2d"],
    "padding": ["ZeroPad2d", "ConstantPad1d", "ReflectionPad2d", "ReplicationPad3d",
                "CircularPad2d"],
    "pixelshuffle": ["PixelShuffle", "PixelUnshuffle"],
    "pooling": ["MaxPool2d", "AvgPool2d", "LPPool2d", "AdaptiveAvgPool2d", "MaxUnpool2d",
                "FractionalMaxPool2d", "FractionalMaxPool3d", "_MaxPoolNd", "_AvgPoolNd"],
    "rnn": ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"],
    "sparse": ["Embedding", "EmbeddingBag"],
    "transformer": ["Transformer", "TransformerEncoder", "TransformerDecoder",
                    "TransformerEncoderLayer", "TransformerDecoderLayer"],
    "upsampling": ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"],
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_pytorch_path_holds_the_class(path):
    module = importlib.import_module(f"ember.nn.modules.{path}")
    for name in PATHS[path]:
        cls = getattr(module, name)  # from ember.nn.modules.<path> import <name>
        assert inspect.isclass(cls), (path, name)
        if hasattr(nn, name):  # the same class under ember.nn
            assert getattr(nn, name) is cls, f"nn.{name} differs from nn.modules.{path}.{name}"


def test_the_word_language_model_import_line():
    from ember.nn.modules.activation import MultiheadAttention
    from ember.nn.modules.linear import NonDynamicallyQuantizableLinear

    mha = MultiheadAttention(8, 2)
    assert isinstance(mha.out_proj, NonDynamicallyQuantizableLinear)


def test_missing_name_raises_attribute_error():
    conv = importlib.import_module("ember.nn.modules.conv")
    with pytest.raises(AttributeError, match="LazyConv4d"):
        conv.LazyConv4d  # noqa: B018
    with pytest.raises(ImportError):
        exec("from ember.nn.modules.batchnorm import BatchNorm4d", {})


def test_utils_helpers():
    from ember.nn.modules.utils import (
        _ntuple, _pair, _quadruple, _reverse_repeat_tuple, _single, _triple,
        consume_prefix_in_state_dict_if_present,
    )

    assert _single(3) == (3,) and _pair(3) == (3, 3) and _triple(2) == (2, 2, 2)
    assert _quadruple(1) == (1, 1, 1, 1) and _pair([4, 5]) == (4, 5)
    assert _ntuple(5)("ab") == ("ab",) * 5  # strings are scalars
    assert _reverse_repeat_tuple((1, 2), 2) == (2, 2, 1, 1)
    state = {"module.fc.weight": 1, "module.fc.bias": 2, "other": 3}
    consume_prefix_in_state_dict_if_present(state, "module.")
    assert state == {"fc.weight": 1, "fc.bias": 2, "other": 3}


def _pytorch_classes():
    """(path, class name) for every public class PyTorch defines in a nn.modules file."""
    torch = pytest.importorskip("torch")
    found = []
    for info in pkgutil.iter_modules(torch.nn.modules.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"torch.nn.modules.{info.name}")
        found += [(info.name, name) for name, obj in vars(module).items()
                  if inspect.isclass(obj) and not name.startswith("_")
                  and obj.__module__ == module.__name__]
    return found


def test_every_pytorch_nn_modules_class_is_at_the_same_path():
    missing = []
    for path, name in _pytorch_classes():
        try:
            module = importlib.import_module(f"ember.nn.modules.{path}")
        except ImportError:
            missing.append(f"nn.modules.{path} (module)")
            continue
        if not inspect.isclass(getattr(module, name, None)):
            missing.append(f"nn.modules.{path}.{name}")
    assert not missing, "missing in ember: " + ", ".join(missing)


# PyTorch names ember leaves out on purpose (docs/differences.md)
NOT_IN_EMBER = {"module": {"register_module_backward_hook"}}


def test_every_name_in_pytorch_submodule_all_exists():
    torch = pytest.importorskip("torch")
    missing = []
    for info in pkgutil.iter_modules(torch.nn.modules.__path__):
        theirs = importlib.import_module(f"torch.nn.modules.{info.name}")
        names = set(getattr(theirs, "__all__", ())) - NOT_IN_EMBER.get(info.name, set())
        if not names:
            continue
        ours = importlib.import_module(f"ember.nn.modules.{info.name}")
        missing += [f"{info.name}.{n}" for n in sorted(names) if not hasattr(ours, n)]
    assert not missing, missing


def test_every_nn_modules_export_of_pytorch_exists():
    torch = pytest.importorskip("torch")
    import ember.nn.modules as ours

    missing = [name for name in torch.nn.modules.__all__ if not hasattr(ours, name)]
    assert not missing, missing


def _registrations(m) -> list:
    """What the global registration hooks of library m see while a small net is built;
    the parameter hook also swaps in a replacement for Linear's bias."""
    module = importlib.import_module(f"{m.__name__}.nn.modules.module")
    seen, replacements = [], []

    def on_parameter(owner, name, param):
        seen.append(("parameter", type(owner).__name__, name))
        if name == "bias" and isinstance(owner, m.nn.Linear):
            replacements.append(m.nn.Parameter(m.zeros(tuple(param.shape))))
            return replacements[-1]
        return None

    handles = [
        module.register_module_parameter_registration_hook(on_parameter),
        module.register_module_buffer_registration_hook(
            lambda owner, name, buf: seen.append(("buffer", type(owner).__name__, name))),
        module.register_module_module_registration_hook(
            lambda owner, name, sub: seen.append(("module", type(owner).__name__, name))),
    ]
    try:
        net = m.nn.Sequential(m.nn.Linear(2, 2), m.nn.BatchNorm1d(2))
        net.extra = m.nn.ReLU()
        net.register_buffer("z", m.zeros(1))
    finally:
        for handle in handles:
            handle.remove()
    m.nn.Linear(1, 1)  # after remove(): not seen
    assert net[0].bias is replacements[0]  # (then reset_parameters fills it)
    return seen


def test_registration_hooks():
    seen = _registrations(importlib.import_module("ember"))
    assert seen == [
        ("parameter", "Linear", "weight"), ("parameter", "Linear", "bias"),
        ("parameter", "BatchNorm1d", "weight"), ("parameter", "BatchNorm1d", "bias"),
        ("buffer", "BatchNorm1d", "running_mean"), ("buffer", "BatchNorm1d", "running_var"),
        ("buffer", "BatchNorm1d", "num_batches_tracked"),
        ("module", "Sequential", "0"), ("module", "Sequential", "1"),
        ("module", "Sequential", "extra"), ("buffer", "Sequential", "z"),
    ]


def test_registration_hooks_match_pytorch():
    torch = pytest.importorskip("torch")
    assert _registrations(importlib.import_module("ember")) == _registrations(torch)
