"""nn.utils.prune: masks, the reparametrization, iterative pruning, and parity with PyTorch."""

import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.utils import prune


def _linear(weight):
    layer = nn.Linear(weight.shape[1], weight.shape[0])
    with ember.no_grad():
        layer.weight.copy_(ember.tensor(weight))
    return layer


def _zeros(t):
    return int((t == 0).sum())


# ---- hand-derived checks (always run) ----

def test_l1_unstructured_fraction_and_count():
    w = np.arange(1, 21, dtype=np.float32).reshape(4, 5)
    layer = prune.l1_unstructured(_linear(w), "weight", amount=0.3)
    assert _zeros(layer.weight) == 6
    assert layer.weight_mask.view(-1).tolist() == [0.0] * 6 + [1.0] * 14
    layer = prune.l1_unstructured(_linear(-w), "weight", amount=3)
    assert layer.weight_mask.view(-1).tolist() == [0.0] * 3 + [1.0] * 17


def test_reparametrization():
    layer = prune.l1_unstructured(_linear(np.ones((3, 4), np.float32)), "weight", amount=2)
    assert [n for n, _ in layer.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in layer.named_buffers()] == ["weight_mask"]
    assert list(layer.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert "weight" in layer.__dict__ and not isinstance(layer.weight, nn.Parameter)
    (hook,) = layer._forward_pre_hooks.values()
    assert isinstance(hook, prune.L1Unstructured) and hook._tensor_name == "weight"
    assert prune.is_pruned(nn.Sequential(layer)) and not prune.is_pruned(nn.Linear(2, 2))

    # the hook recomputes weight from weight_orig before every forward
    with ember.no_grad():
        layer.weight_orig.fill_(2.0)
    layer(ember.ones(1, 4)).sum().backward()
    assert layer.weight.tolist() == (2.0 * layer.weight_mask).tolist()
    assert layer.weight_orig.grad.tolist() == layer.weight_mask.tolist()


def test_remove_makes_pruning_permanent():
    layer = prune.l1_unstructured(_linear(np.arange(12, dtype=np.float32).reshape(3, 4)),
                                  "weight", amount=5)
    orig = layer.weight_orig
    prune.remove(layer, "weight")
    assert layer.weight is orig and isinstance(layer.weight, nn.Parameter)
    assert [n for n, _ in layer.named_parameters()] == ["bias", "weight"]
    assert list(layer.named_buffers()) == [] and len(layer._forward_pre_hooks) == 0
    assert _zeros(layer.weight) == 5 and not prune.is_pruned(layer)
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(layer, "weight")


def test_iterative_unstructured_counts_remaining_entries():
    w = np.arange(1, 101, dtype=np.float32).reshape(10, 10)
    layer = prune.l1_unstructured(_linear(w), "weight", amount=0.5)
    prune.l1_unstructured(layer, "weight", amount=0.5)  # half of the 50 left
    assert _zeros(layer.weight_mask) == 75
    assert layer.weight_mask.view(-1).tolist() == [0.0] * 75 + [1.0] * 25
    prune.random_unstructured(layer, "weight", amount=5)
    assert _zeros(layer.weight_mask) == 80
    (hook,) = layer._forward_pre_hooks.values()
    assert isinstance(hook, prune.PruningContainer) and len(hook) == 3
    assert [type(m).__name__ for m in hook] == ["L1Unstructured", "L1Unstructured",
                                                "RandomUnstructured"]


def test_random_methods_counts_and_structure():
    ember.manual_seed(0)
    layer = prune.random_unstructured(nn.Linear(10, 8), "weight", amount=0.25)
    assert _zeros(layer.weight_mask) == 20
    conv = prune.random_structured(nn.Conv2d(3, 6, 3), "weight", amount=2, dim=0)
    per_channel = conv.weight_mask.sum(dim=(1, 2, 3)).tolist()
    assert sorted(per_channel) == [0.0, 0.0] + [27.0] * 4
    conv = prune.random_structured(nn.Conv2d(4, 6, 3), "weight", amount=0.5, dim=1)
    assert sorted(conv.weight_mask.sum(dim=(0, 2, 3)).tolist()) == [0.0] * 2 + [54.0] * 2


def test_ln_structured_hand_derived():
    w = np.array([[3, 0, 0], [1, 1, 1], [0, 2, 0], [5, 5, 5]], dtype=np.float32)
    # 1-norms of the rows: 3, 3, 2, 15; 2-norms: 3, 1.73, 2, 8.66; inf-norms: 3, 1, 2, 5
    for n, dropped in [(1, [2]), (2, [1]), (math.inf, [1])]:
        layer = prune.ln_structured(_linear(w), "weight", amount=1, n=n, dim=0)
        rows = layer.weight_mask.sum(dim=1).tolist()
        assert [i for i, r in enumerate(rows) if r == 0] == dropped
    # structured pruning after unstructured: the channels still alive are ranked
    w = np.array([[3, 4, 4], [1, 1, 1], [2, 6, 6], [5, 5, 5]], dtype=np.float32)
    layer = prune.l1_unstructured(_linear(w), "weight", amount=3)  # row 1 goes
    prune.ln_structured(layer, "weight", amount=1, n=1, dim=0)  # then the weakest of 0, 2, 3
    assert layer.weight_mask.sum(dim=1).tolist() == [0.0, 0.0, 3.0, 3.0]


def test_custom_from_mask_and_identity():
    mask = ember.tensor([[1.0, 0.0], [0.0, 1.0]])
    layer = prune.custom_from_mask(_linear(np.ones((2, 2), np.float32)), "weight", mask)
    assert layer.weight.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    layer = prune.identity(nn.Linear(2, 3), "bias")
    assert layer.bias_mask.tolist() == [1.0, 1.0, 1.0]
    assert layer.bias.tolist() == layer.bias_orig.tolist()


def test_prune_method_on_a_tensor():
    t = ember.tensor([4.0, -1.0, 3.0, 0.5])
    assert prune.L1Unstructured(amount=2).prune(t).tolist() == [4.0, 0.0, 3.0, 0.0]
    scores = ember.tensor([0.0, 9.0, 9.0, 9.0])
    assert prune.L1Unstructured(1).prune(t, importance_scores=scores).tolist() == [
        0.0, -1.0, 3.0, 0.5]


def test_global_unstructured_hand_derived():
    a = _linear(np.array([[1.0, 8.0], [2.0, 9.0]], np.float32))
    b = _linear(np.array([[3.0, 7.0, 0.5]], np.float32))
    params = [(a, "weight"), (b, "weight")]
    prune.global_unstructured(params, prune.L1Unstructured, amount=3)
    assert a.weight.tolist() == [[0.0, 8.0], [0.0, 9.0]]
    assert b.weight.tolist() == [[3.0, 7.0, 0.0]]
    # again: the next 2 smallest among the 4 entries left
    prune.global_unstructured(params, prune.L1Unstructured, amount=2)
    assert a.weight.tolist() == [[0.0, 8.0], [0.0, 9.0]]
    assert b.weight.tolist() == [[0.0, 0.0, 0.0]]
    scores = {(a, "bias"): ember.tensor([100.0, -1.0])}
    prune.global_unstructured([(a, "bias")], prune.L1Unstructured, importance_scores=scores,
                              amount=1)
    assert a.bias_mask.tolist() == [1.0, 0.0]


@pytest.mark.parametrize("amount, error, message", [
    (-1, ValueError, "should either be a float in the range"),
    (1.5, ValueError, "should either be a float in the range"),
    (-0.1, ValueError, "should either be a float in the range"),
    ("3", TypeError, "Invalid type for amount"),
])
def test_amount_validation(amount, error, message):
    with pytest.raises(error, match=message):
        prune.l1_unstructured(nn.Linear(3, 2), "weight", amount=amount)
    with pytest.raises(error, match=message):
        prune.RandomStructured(amount)


def test_errors_leave_module_unchanged():
    layer = nn.Linear(3, 2)
    with pytest.raises(ValueError, match="should be smaller than the number of parameters"):
        prune.l1_unstructured(layer, "weight", amount=7)
    assert sorted(n for n, _ in layer.named_parameters()) == ["bias", "weight"]
    assert not prune.is_pruned(layer) and list(layer.named_buffers()) == []
    with pytest.raises(ValueError, match="Structured pruning can only be applied"):
        prune.ln_structured(layer, "bias", amount=1, n=2, dim=0)
    with pytest.raises(IndexError, match="Invalid index 2"):
        prune.ln_structured(layer, "weight", amount=1, n=2, dim=2)
    prune.l1_unstructured(layer, "weight", amount=2)
    with pytest.raises(ValueError, match="should be smaller than the number of parameters"):
        prune.l1_unstructured(layer, "weight", amount=5)  # only 4 left
    (hook,) = layer._forward_pre_hooks.values()
    assert isinstance(hook, prune.L1Unstructured)
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE'):
        prune.global_unstructured([(layer, "bias")], prune.LnStructured, amount=1, n=1)
    with pytest.raises(TypeError, match="is not an Iterable"):
        prune.global_unstructured(3, prune.L1Unstructured, amount=1)


def test_ties_prune_the_lowest_indices_first():
    layer = nn.Linear(4, 1, bias=False)
    with ember.no_grad():
        layer.weight.copy_(ember.tensor([[2.0, -1.0, 1.0, -1.0]]))
    prune.l1_unstructured(layer, "weight", amount=2)
    assert layer.weight_mask.tolist() == [[1.0, 0.0, 0.0, 1.0]]


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.conv2 = nn.Conv2d(6, 16, 3)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = nn.functional.max_pool2d(nn.functional.relu(self.conv1(x)), 2)
        x = nn.functional.max_pool2d(nn.functional.relu(self.conv2(x)), 2)
        x = x.flatten(1)
        return self.fc3(nn.functional.relu(self.fc2(nn.functional.relu(self.fc1(x)))))


def test_tutorial_flow(capsys):
    ember.manual_seed(0)
    model = LeNet()
    module = model.conv1
    prune.random_unstructured(module, name="weight", amount=0.3)
    prune.l1_unstructured(module, name="bias", amount=3)
    print(list(module.named_buffers()))
    print(module._forward_pre_hooks)
    out = capsys.readouterr().out
    assert "weight_mask" in out and "bias_mask" in out and "RandomUnstructured" in out
    assert [n for n, _ in module.named_parameters()] == ["weight_orig", "bias_orig"]
    prune.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)
    assert sum(c == 0 for c in module.weight_mask.sum(dim=(1, 2, 3)).tolist()) == 3

    for name, sub in model.named_modules():
        if isinstance(sub, nn.Conv2d) and name != "conv1":
            prune.l1_unstructured(sub, name="weight", amount=0.2)
        elif isinstance(sub, nn.Linear):
            prune.l1_unstructured(sub, name="weight", amount=0.4)
    assert _zeros(model.fc1.weight) == round(0.4 * 400 * 120)
    assert set(model.state_dict()) >= {"conv2.weight_orig", "conv2.weight_mask"}

    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    x, y = ember.randn(4, 1, 28, 28), ember.tensor([1, 2, 3, 4])
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    grad = model.fc1.weight_orig.grad
    assert (grad * (1 - model.fc1.weight_mask)).abs().sum().item() == 0.0
    opt.step()
    model(x)  # the hooks recompute the pruned weights from the updated _orig
    assert _zeros(model.fc1.weight) >= round(0.4 * 400 * 120)

    for sub in (model.conv1, model.conv2, model.fc1, model.fc2, model.fc3):
        prune.remove(sub, "weight")
    prune.remove(model.conv1, "bias")
    assert not prune.is_pruned(model)
    assert all("_orig" not in k and "_mask" not in k for k in model.state_dict())
    assert _zeros(model.fc1.weight) >= round(0.4 * 400 * 120)


# ---- parity with PyTorch ----

def _torch_prune():
    torch = pytest.importorskip("torch")
    return torch, pytest.importorskip("torch.nn.utils.prune")


def _pair(torch, weight):
    ours = _linear(weight)
    theirs = torch.nn.Linear(weight.shape[1], weight.shape[0])
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(weight))
        theirs.bias.copy_(torch.tensor(ours.bias.detach().numpy()))
    return ours, theirs


def _same(ours, theirs):
    return np.array_equal(ours.detach().numpy(), theirs.detach().numpy())


def _tied_weight(shape, seed=0):
    """Weights with distinct magnitudes (PyTorch breaks ties its own way), some exactly zero
    after the first pruning."""
    rng = np.random.default_rng(seed)
    values = rng.permutation(np.prod(shape)) + 1.0 + rng.random(np.prod(shape)) * 0.5
    signs = np.random.default_rng(seed + 100).choice([-1.0, 1.0], np.prod(shape))
    return (values * signs / 8).reshape(shape).astype(np.float32)


@pytest.mark.parametrize("amount", [0.3, 0.5, 3, 17, 0.0, 1.0])
@pytest.mark.parametrize("seed", range(3))
def test_l1_unstructured_matches_torch(amount, seed):
    torch, tp = _torch_prune()
    ours, theirs = _pair(torch, _tied_weight((6, 5), seed))
    prune.l1_unstructured(ours, "weight", amount=amount)
    tp.l1_unstructured(theirs, "weight", amount=amount)
    assert _same(ours.weight_mask, theirs.weight_mask)
    assert _same(ours.weight, theirs.weight)
    assert list(ours.state_dict()) == list(theirs.state_dict())


@pytest.mark.parametrize("n", [1, 2, math.inf, -math.inf])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("amount", [1, 0.5, 0.4])
def test_ln_structured_matches_torch(n, dim, amount):
    torch, tp = _torch_prune()
    w = _tied_weight((6, 5), seed=1)
    ours, theirs = _pair(torch, w)
    prune.ln_structured(ours, "weight", amount=amount, n=n, dim=dim)
    tp.ln_structured(theirs, "weight", amount=amount, n=n, dim=dim)
    assert _same(ours.weight_mask, theirs.weight_mask)
    conv, tconv = nn.Conv2d(3, 8, 3), torch.nn.Conv2d(3, 8, 3)
    cw = _tied_weight((8, 3, 3, 3), seed=2)
    with ember.no_grad():
        conv.weight.copy_(ember.tensor(cw))
    with torch.no_grad():
        tconv.weight.copy_(torch.tensor(cw))
    prune.ln_structured(conv, "weight", amount=amount, n=n, dim=dim)
    tp.ln_structured(tconv, "weight", amount=amount, n=n, dim=dim)
    assert _same(conv.weight_mask, tconv.weight_mask)


def test_iterative_pruning_and_remove_match_torch():
    torch, tp = _torch_prune()
    ours, theirs = _pair(torch, _tied_weight((8, 6), seed=3))
    steps = [
        ("l1_unstructured", dict(amount=0.3)),
        ("ln_structured", dict(amount=2, n=1, dim=0)),
        ("l1_unstructured", dict(amount=5)),
        ("ln_structured", dict(amount=0.5, n=2, dim=1)),
        ("l1_unstructured", dict(amount=0.25)),
    ]
    for fn, kwargs in steps:
        getattr(prune, fn)(ours, "weight", **kwargs)
        getattr(tp, fn)(theirs, "weight", **kwargs)
        assert _same(ours.weight_mask, theirs.weight_mask), fn
        assert _same(ours.weight, theirs.weight)
    assert list(ours.state_dict()) == list(theirs.state_dict())

    x = np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32)
    ours(ember.tensor(x)).square().sum().backward()
    theirs(torch.tensor(x)).square().sum().backward()
    np.testing.assert_allclose(ours.weight_orig.grad.numpy(), theirs.weight_orig.grad.numpy(),
                               rtol=1e-5, atol=1e-6)
    assert _same(ours.weight_orig.grad == 0, theirs.weight_orig.grad == 0)

    prune.remove(ours, "weight")
    tp.remove(theirs, "weight")
    assert _same(ours.weight, theirs.weight)
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_custom_from_mask_matches_torch():
    torch, tp = _torch_prune()
    w = _tied_weight((4, 5), seed=4)
    mask = (np.random.default_rng(1).random((4, 5)) > 0.5).astype(np.float32)
    ours, theirs = _pair(torch, w)
    prune.l1_unstructured(ours, "weight", amount=4)
    tp.l1_unstructured(theirs, "weight", amount=4)
    prune.custom_from_mask(ours, "weight", ember.tensor(mask))
    tp.custom_from_mask(theirs, "weight", torch.tensor(mask))
    assert _same(ours.weight_mask, theirs.weight_mask)
    assert _same(ours.weight, theirs.weight)


@pytest.mark.parametrize("amount", [0.2, 7, 0.6])
def test_global_unstructured_matches_torch(amount):
    torch, tp = _torch_prune()
    a, ta = _pair(torch, _tied_weight((4, 5), seed=5))
    b, tb = _pair(torch, _tied_weight((3, 4), seed=6))
    prune.l1_unstructured(b, "weight", amount=3)
    tp.l1_unstructured(tb, "weight", amount=3)
    scores = (np.random.default_rng(2).permutation(4) * 0.37 + 0.05).astype(np.float32)
    prune.global_unstructured([(a, "weight"), (b, "weight"), (a, "bias")],
                              prune.L1Unstructured, amount=amount,
                              importance_scores={(a, "bias"): ember.tensor(scores)})
    tp.global_unstructured([(ta, "weight"), (tb, "weight"), (ta, "bias")],
                           tp.L1Unstructured, amount=amount,
                           importance_scores={(ta, "bias"): torch.tensor(scores)})
    for ours, theirs in [(a.weight_mask, ta.weight_mask), (b.weight_mask, tb.weight_mask),
                         (a.bias_mask, ta.bias_mask), (a.weight, ta.weight)]:
        assert _same(ours, theirs)
    assert list(a.state_dict()) == list(ta.state_dict())


def test_error_messages_match_torch():
    torch, tp = _torch_prune()
    for amount in (-1, 1.5, "x", 7):
        with pytest.raises(Exception) as ours:
            prune.l1_unstructured(nn.Linear(3, 2), "weight", amount=amount)
        with pytest.raises(Exception) as theirs:
            tp.l1_unstructured(torch.nn.Linear(3, 2), "weight", amount=amount)
        assert type(ours.value) is type(theirs.value)
        assert str(ours.value) == str(theirs.value)
