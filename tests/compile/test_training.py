"""Compiled training equals eager training: loss and every gradient, step after step."""

import copy

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember._compile.graph_node import GraphNode
from ember._compile.program import CompiledGraph
from ember.ops import _native as native


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(20, 32), nn.Linear(32, 16), nn.Linear(16, 5)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = F.gelu(self.fc2(h)) * 0.5 + h[:, :16].tanh()   # an elementwise chain to fuse
        return self.fc3(h)


class Block(nn.Module):
    """A GPT block: causal self-attention and an MLP, with residuals and dropout."""

    def __init__(self, n_embd=16, n_head=2, block=8):
        super().__init__()
        self.n_head = n_head
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.qkv, self.proj = nn.Linear(n_embd, 3 * n_embd), nn.Linear(n_embd, n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(),
                                 nn.Linear(4 * n_embd, n_embd), nn.Dropout(0.1))
        self.register_buffer("mask", ember.tril(ember.ones(block, block)).view(1, 1, block,
                                                                                 block))

    def forward(self, x, targets):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
                   for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.n_head) ** 0.5)
        att = F.softmax(att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.proj(y)
        x = x + self.mlp(self.ln2(x))
        # (mse_loss is one node; the second term is an elementwise chain to fuse)
        return F.mse_loss(x, targets) + ((x - targets).abs() * 0.1).mean()


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 4, 3), nn.Conv2d(4, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.bn(self.conv2(x))), 2)
        return F.log_softmax(self.fc(ember.flatten(self.drop(x), 1)), dim=1)


def _batches(kind, steps, dtype):
    rng = np.random.default_rng(7)
    for _ in range(steps):
        if kind == "mlp":
            yield (ember.tensor(rng.standard_normal((12, 20)).astype(dtype)),
                   ember.tensor(rng.integers(0, 5, 12)))
        elif kind == "gpt":
            yield (ember.tensor(rng.standard_normal((3, 8, 16)).astype(dtype)),
                   ember.tensor(rng.standard_normal((3, 8, 16)).astype(dtype)))
        else:
            yield (ember.tensor(rng.standard_normal((6, 1, 12, 12)).astype(dtype)),
                   ember.tensor(rng.integers(0, 10, 6)))


def _loss(kind, model, x, y):
    if kind == "mlp":
        return F.cross_entropy(model(x), y)
    if kind == "gpt":
        return model(x, y)
    return F.nll_loss(model(x), y)


def _train(kind, model, steps, dtype):
    """Losses and gradients of `steps` AdamW steps (the same seed for dropout)."""
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    ember.manual_seed(123)
    losses, grads = [], []
    for x, y in _batches(kind, steps, dtype):
        opt.zero_grad()
        loss = _loss(kind, model, x, y)
        loss.backward()
        losses.append(loss.item())
        grads.append([p.grad.numpy().copy() for p in model.parameters()])
        opt.step()
    return losses, grads


@pytest.mark.parametrize("kind", ["mlp", "gpt", "cnn"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_training_matches_eager(kind, dtype):
    ember.manual_seed(0)
    model = {"mlp": MLP, "gpt": Block, "cnn": CNN}[kind]()
    if dtype == np.float64:
        model = model.double()
    twin = copy.deepcopy(model)
    compiled = ember.compile(twin)
    steps = 4
    eager_losses, eager_grads = _train(kind, model, steps, dtype)
    losses, grads = _train(kind, compiled, steps, dtype)
    assert compiled._compiled.captures == 1          # one capture, then replays
    assert all(isinstance(g, CompiledGraph) for g in compiled._compiled.graphs.values())
    # (trained through one node per graph: graph_node.py)
    assert all(g.whole is not None for g in compiled._compiled.graphs.values())
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(losses, eager_losses, **tol)
    for got, expected in zip(grads, eager_grads):
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, **tol)
    for p, q in zip(twin.parameters(), model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), **tol)
    for b, c in zip(twin.buffers(), model.buffers()):  # batch norm's running statistics
        np.testing.assert_allclose(b.numpy(), c.numpy(), **tol)


def test_the_mlp_and_block_graphs_hold_fused_chains():
    for model, args in [(MLP(), (ember.randn(4, 20),)),
                        (Block(), (ember.randn(2, 8, 16), ember.randn(2, 8, 16)))]:
        compiled = ember.compile(model)
        compiled(*args)
        (graph,) = compiled._compiled.graphs.values()
        assert bool(graph.chains) == native.enabled()


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_compiled_training_matches_eager_without_numba(kind):
    with native.use_numba(False):
        test_compiled_training_matches_eager(kind, np.float32)


def test_a_compiled_step_is_freed_by_reference_counting_alone():
    import gc
    import weakref

    model = MLP()
    compiled = ember.compile(model)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    x, y = next(_batches("mlp", 1, np.float32))
    gc.collect()
    gc.disable()  # (a reference cycle would keep a step's graph and buffers alive)
    try:
        refs = []
        for _ in range(6):
            opt.zero_grad()
            out = compiled(x)
            loss = F.cross_entropy(out, y)
            refs.append((weakref.ref(out), weakref.ref(loss.grad_fn)))
            loss.backward()
            opt.step()
            del out, loss
        assert all(r() is None for pair in refs for r in pair)
        objects = len(gc.get_objects())
        for _ in range(20):
            opt.zero_grad()
            F.cross_entropy(compiled(x), y).backward()
            opt.step()
        assert len(gc.get_objects()) - objects < 50
    finally:
        gc.enable()
    (graph,) = compiled._compiled.graphs.values()
    assert all(chain.pool.allocated <= 4 for chain in graph.chains)  # buffers reused


class InplaceNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(20, 32), nn.Linear(32, 5)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        h = self.act(self.fc1(x))
        h = (h * 0.5 + 1.0).tanh() * h   # a chain after the in-place relu
        return self.fc2(h)


def test_a_model_with_in_place_activations_trains_like_eager():
    ember.manual_seed(0)
    model = InplaceNet()
    twin = copy.deepcopy(model)
    compiled = ember.compile(twin)
    eager_losses, eager_grads = _train("mlp", model, 3, np.float32)
    losses, grads = _train("mlp", compiled, 3, np.float32)
    (graph,) = compiled._compiled.graphs.values()
    assert bool(graph.chains) == native.enabled()
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5)
    for got, expected in zip(grads, eager_grads):
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-6)


def test_a_resnet_with_in_place_relus_and_residual_adds_trains_like_eager():
    from ember.vision.models import resnet

    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8),
                          nn.ReLU(inplace=True), resnet.BasicBlock(8, 8),
                          resnet.BasicBlock(8, 8), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(8, 10))  # ResNet's blocks: in-place ReLUs, out += x
    twin = copy.deepcopy(model)
    compiled = ember.compile(twin)
    rng = np.random.default_rng(5)
    x = ember.tensor(rng.standard_normal((2, 3, 16, 16)).astype(np.float32))
    y = ember.tensor([1, 3])
    for net in (model, compiled):
        opt = ember.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        net.losses = []
        for _ in range(2):  # a capture, then a replay
            opt.zero_grad()
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            net.losses.append(loss.item())
    assert isinstance(next(iter(compiled._compiled.graphs.values())), CompiledGraph)
    np.testing.assert_allclose(compiled.losses, model.losses, rtol=1e-5)
    for p, q in zip(twin.parameters(), model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4,
                                   atol=1e-6)


_MODELS = {  # name -> (model, one batch of inputs): standard layers through the training replay
    "conv-bn-pool": (lambda: nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.ReLU(),
                                           nn.MaxPool2d(2), nn.Flatten(), nn.Linear(36, 3)),
                     lambda r: (r(2, 2, 8, 8),)),
    "lstm": (lambda: nn.LSTM(4, 5, 2), lambda r: (r(6, 3, 4),)),
    "gru": (lambda: nn.GRU(4, 5), lambda r: (r(6, 3, 4),)),
    "attention": (lambda: nn.MultiheadAttention(8, 2, batch_first=True),
                  lambda r: (r(2, 5, 8), r(2, 5, 8), r(2, 5, 8))),
    "transformer-layer": (lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1,
                                                             batch_first=True),
                          lambda r: (r(2, 5, 8),)),
    "groupnorm-silu-pool": (lambda: nn.Sequential(nn.Conv2d(2, 4, 3, padding=1),
                                                  nn.GroupNorm(2, 4), nn.SiLU(),
                                                  nn.AdaptiveAvgPool2d(1), nn.Flatten()),
                            lambda r: (r(2, 2, 6, 6),)),
    "conv-transpose": (lambda: nn.Sequential(nn.ConvTranspose2d(2, 3, 3, stride=2), nn.Tanh()),
                       lambda r: (r(2, 2, 4, 4),)),
    "dropout2d-instancenorm": (lambda: nn.Sequential(nn.Conv2d(2, 4, 3),
                                                     nn.InstanceNorm2d(4, affine=True),
                                                     nn.Dropout2d(0.3), nn.ReLU()),
                               lambda r: (r(2, 2, 6, 6),)),
    "prelu-layernorm": (lambda: nn.Sequential(nn.Linear(4, 6), nn.PReLU(), nn.LayerNorm(6),
                                              nn.Linear(6, 2)),
                        lambda r: (r(3, 4),)),
}


@pytest.mark.parametrize("name", sorted(_MODELS))
def test_standard_layers_train_through_the_training_replay_like_eager(name):
    make, batch = _MODELS[name]
    ember.manual_seed(0)
    model = make()
    twin = copy.deepcopy(model)
    compiled = ember.compile(twin)
    rng = np.random.default_rng(0)

    def tensor(*shape):
        return ember.tensor(rng.standard_normal(shape).astype(np.float32))

    optimizers = [ember.optim.SGD(m.parameters(), lr=0.05) for m in (model, twin)]
    for step in range(3):
        inputs = batch(tensor)
        losses = []
        for run, opt in zip((model, compiled), optimizers):
            ember.manual_seed(step)  # (the same dropout masks)
            out = run(*inputs)
            out = out[0] if isinstance(out, tuple) else out
            loss = out.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5, atol=1e-6)
    assert isinstance(out.grad_fn, GraphNode)
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-4, atol=1e-5)


class _LossInside(nn.Module):
    """A module whose forward computes its class-index losses from its targets."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)

    def forward(self, x, y):
        logits = self.fc(x)
        return (F.cross_entropy(logits, y) + F.cross_entropy(logits, y, ignore_index=1)
                + F.nll_loss(F.log_softmax(logits, 1), y, weight=ember.tensor([1., 2., 3., 4.])))


def test_losses_inside_a_compiled_module_read_each_calls_targets():
    # class-index losses read their targets' values in the op, so the replay takes each
    # call's targets (they were once arrays computed before the op: frozen into the graph)
    ember.manual_seed(3)
    model = _LossInside()
    compiled = ember.compile(model)
    x = ember.randn(5, 6)
    for targets in ([0, 1, 2, 3, 0], [3, 3, 3, 3, 3], [1, 0, 1, 1, 2], [2, 2, 0, 1, 3]):
        y = ember.tensor(targets)
        results = []
        for m in (model, compiled):
            model.zero_grad()
            loss = m(x, y)
            loss.backward()
            results.append((loss.item(), model.fc.weight.grad.numpy().copy()))
        assert results[1][0] == pytest.approx(results[0][0], rel=1e-6)
        np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-6, atol=1e-7)
    assert compiled._compiled.captures == 1


class _MarginLossesInside(nn.Module):
    """A module whose forward computes the margin losses of class-index targets."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)

    def forward(self, x, y, z):
        h = self.fc(x)
        return (F.multi_margin_loss(h, y, weight=ember.tensor([1., 2., 3., 4.]))
                + F.multilabel_margin_loss(h, z))


def test_margin_losses_inside_a_compiled_module_read_each_calls_targets():
    # as the class-index losses above: the targets' selections are ops on the targets
    ember.manual_seed(4)
    model = _MarginLossesInside()
    compiled = ember.compile(model)
    x = ember.randn(5, 6)
    for single, lists in (([0, 1, 2, 3, 0], [0, 1, -1, 0]), ([3, 3, 3, 3, 3], [2, -1, 0, 0]),
                          ([1, 0, 1, 0, 2], [3, 2, 1, -1])):
        y, z = ember.tensor(single), ember.tensor([lists] * 5)
        results = []
        for m in (model, compiled):
            model.zero_grad()
            loss = m(x, y, z)
            loss.backward()
            results.append((loss.item(), model.fc.weight.grad.numpy().copy()))
        assert results[1][0] == pytest.approx(results[0][0], rel=1e-6)
        np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-6, atol=1e-7)
    assert compiled._compiled.captures == 1
