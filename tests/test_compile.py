"""ember.compile: the PyTorch-facing surface (wrapping, decorators, backends, state-dict keys);
tests/compile/ checks capture, fusion, guards and training against eager."""

import pytest

import ember
from ember import nn

try:
    import torch
except ImportError:  # the key-layout comparison skips without PyTorch
    torch = None


def test_a_compiled_module_computes_and_trains_like_the_original():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    compiled = ember.compile(model)
    x = ember.randn(5, 4)
    assert ember.equal(compiled(x), model(x))
    assert isinstance(compiled, ember.compiler.OptimizedModule)
    assert compiled._orig_mod is model
    assert ember.compile(model[0]).weight is model[0].weight  # attributes fall through
    compiled(x).sum().backward()
    assert model[0].weight.grad is not None
    compiled.eval()
    assert not model.training


def test_functions_decorators_and_disable():
    @ember.compile(mode="reduce-overhead", fullgraph=True)
    def double(x):
        return x * 2

    assert double(ember.ones(2)).tolist() == [2.0, 2.0] and double.__name__ == "double"
    model = nn.Linear(2, 2)
    assert ember.compile(model, disable=True) is model
    assert not ember.compiler.is_compiling()
    assert ember.compiler.disable(double) is double


def test_bad_backends_and_modes():
    with pytest.raises(RuntimeError, match="Invalid backend: 'tvm2'"):
        ember.compile(nn.Linear(2, 2), backend="tvm2")
    with pytest.raises(NotImplementedError, match="custom backends"):
        ember.compile(nn.Linear(2, 2), backend=lambda gm, inputs: gm)
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
        ember.compile(nn.Linear(2, 2), mode="fast")
    assert "eager" in ember.compiler.list_backends()


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_state_dict_keys_match_pytorch():
    ours = ember.compile(nn.Linear(3, 2))
    theirs = torch.compile(torch.nn.Linear(3, 2), backend="eager")
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
