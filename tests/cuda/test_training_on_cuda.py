"""Whole models and the APIs around them on a CUDA device, checked against the CPU.

Each model is built once, copied to the GPU, and both copies take the same training
steps on the same data: the losses and the parameters afterwards must agree.  The rest
checks what a PyTorch user does with a GPU: moving tensors and modules, seeding,
saving and loading, mixed precision, pinned loaders, checkpointing and compiling.
Runs only where CuPy sees a GPU.
"""

from __future__ import annotations

import copy
import io

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.testing import assert_close

pytestmark = pytest.mark.cuda


def _fixed_weights(model: nn.Module, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    with ember.no_grad():
        for p in model.parameters():
            scale = 1.0 / np.sqrt(p.shape[-1]) if p.dim() > 1 else 0.1
            p.copy_(ember.tensor(rng.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.fc = nn.Linear(16 * 2 * 2, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv1(x))), 2)
        x = F.avg_pool2d(F.silu(self.conv2(x)), 2)
        return self.fc(ember.flatten(x, 1))


class SmallLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 16)
        self.lstm = nn.LSTM(16, 24, num_layers=2, batch_first=True)
        self.gru = nn.GRU(24, 12, batch_first=True, bidirectional=True)
        self.head = nn.Linear(24, 50)

    def forward(self, tokens):
        x, _ = self.lstm(self.embed(tokens))
        x, _ = self.gru(x)
        return self.head(x).flatten(0, 1)


class SmallTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(40, 32)
        self.layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0,
                                                batch_first=True, activation="gelu")
        self.norm = nn.LayerNorm(32)
        self.head = nn.Linear(32, 40)

    def forward(self, tokens):
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1]).to(
            tokens.device)
        x = self.layer(self.embed(tokens), src_mask=mask, is_causal=True)
        return self.head(self.norm(x)).flatten(0, 1)


def _mlp():
    return nn.Sequential(nn.Linear(20, 32), nn.Tanh(), nn.Linear(32, 32), nn.GELU(),
                         nn.LayerNorm(32), nn.Linear(32, 5))


def _data(name: str, rng):
    if name == "mlp":
        return rng.standard_normal((16, 20)).astype(np.float32), rng.integers(0, 5, 16)
    if name == "cnn":
        return rng.standard_normal((4, 1, 14, 14)).astype(np.float32), rng.integers(0, 10, 4)
    if name == "lstm":
        return rng.integers(0, 50, (3, 7)), rng.integers(0, 50, 21)
    return rng.integers(0, 40, (2, 9)), rng.integers(0, 40, 18)


MODELS = {"mlp": _mlp, "cnn": SmallCNN, "lstm": SmallLSTM, "transformer": SmallTransformer}
OPTIMIZERS = {
    "mlp": lambda ps: ember.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True),
    "cnn": lambda ps: ember.optim.Adadelta(ps, lr=1.0),
    "lstm": lambda ps: ember.optim.SGD(ps, lr=0.5),
    "transformer": lambda ps: ember.optim.AdamW(ps, lr=1e-2),
}


def _train(model, optimizer, batches, device, clip: bool) -> list:
    losses = []
    for x, y in batches:
        x = ember.tensor(x, device=device)
        y = ember.tensor(y, device=device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if clip:
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("name", sorted(MODELS))
def test_training_steps_match_cpu(name):
    rng = np.random.default_rng(1)
    batches = [_data(name, rng) for _ in range(3)]
    cpu_model = MODELS[name]()
    _fixed_weights(cpu_model)
    gpu_model = copy.deepcopy(cpu_model).to("cuda")
    assert all(p.device.type == "cuda" for p in gpu_model.parameters())
    clip = name == "lstm"
    cpu_losses = _train(cpu_model, OPTIMIZERS[name](cpu_model.parameters()), batches, "cpu",
                        clip)
    gpu_losses = _train(gpu_model, OPTIMIZERS[name](gpu_model.parameters()), batches, "cuda",
                        clip)
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-4, atol=1e-5)
    for (key, p_gpu), p_cpu in zip(gpu_model.state_dict().items(),
                                   cpu_model.state_dict().values()):
        assert p_gpu.device.type == "cuda", key
        assert_close(p_gpu.cpu(), p_cpu, rtol=1e-3, atol=1e-4,
                     msg=lambda m, k=key: f"{name}.{k}: {m}")


@pytest.mark.parametrize("make", [
    lambda ps: ember.optim.Adam(ps, lr=0.1, amsgrad=True),
    lambda ps: ember.optim.Adam(ps, lr=0.1, weight_decay=0.1),
    lambda ps: ember.optim.AdamW(ps, lr=0.1),
    lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.5, weight_decay=0.01),
    lambda ps: ember.optim.RMSprop(ps, lr=0.01, centered=True, momentum=0.3),
    lambda ps: ember.optim.Adagrad(ps, lr=0.1),
    lambda ps: ember.optim.Adamax(ps, lr=0.1),
    lambda ps: ember.optim.NAdam(ps, lr=0.1),
    lambda ps: ember.optim.RAdam(ps, lr=0.1),
    lambda ps: ember.optim.Rprop(ps, lr=0.1),
    lambda ps: ember.optim.ASGD(ps, lr=0.1),
], ids=["adam_amsgrad", "adam_wd", "adamw", "sgd", "rmsprop", "adagrad", "adamax", "nadam",
        "radam", "rprop", "asgd"])
def test_optimizers_match_cpu(make):
    rng = np.random.default_rng(2)
    start = rng.standard_normal((6, 5))
    target = rng.standard_normal((6, 5))
    results = []
    for device in ("cpu", "cuda"):
        p = ember.tensor(start, device=device, requires_grad=True)
        goal = ember.tensor(target, device=device)
        opt = make([p])
        for _ in range(4):
            opt.zero_grad()
            ((p - goal) ** 2).sum().backward()
            opt.step()
        assert p.device.type == device
        results.append(p.detach().cpu().numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-10, atol=1e-12)


def test_lbfgs_matches_cpu():
    results = []
    for device in ("cpu", "cuda"):
        p = ember.tensor([1.5, -0.5], dtype=ember.float64, device=device, requires_grad=True)
        opt = ember.optim.LBFGS([p], lr=1, max_iter=20)

        def closure(opt=opt, p=p):
            opt.zero_grad()
            loss = (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2
            loss.backward()
            return loss

        opt.step(closure)
        results.append(p.detach().cpu().numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-8)


def test_moving_tensors_and_modules():
    x = ember.arange(6.0).reshape(2, 3)
    g = x.cuda()
    assert g.is_cuda and g.device == ember.device("cuda", 0) and g.get_device() == 0
    assert g.to("cpu").tolist() == x.tolist()
    h = g.to(ember.float64)
    assert h.is_cuda and h.dtype == ember.float64
    assert x.to(g).device.type == "cuda"
    m = nn.Linear(3, 2).cuda()
    assert m.weight.is_cuda and m(g).is_cuda
    m.cpu()
    assert not m.weight.is_cuda
    with pytest.raises(RuntimeError, match="device"):
        x + g


def test_factories_and_random_on_cuda():
    ember.manual_seed(3)
    a = ember.randn(4, 5, device="cuda")
    ember.manual_seed(3)
    b = ember.randn(4, 5, device="cuda")
    assert a.is_cuda and ember.equal(a, b)
    assert abs(ember.randn(100000, device="cuda").std().item() - 1) < 0.02
    u = ember.rand(1000, device="cuda")
    assert 0 <= u.min().item() and u.max().item() < 1
    assert ember.randint(0, 3, (50,), device="cuda").max().item() <= 2
    assert ember.randperm(10, device="cuda").sort().values.tolist() == list(range(10))
    e = ember.empty(2, 3, device="cuda")
    assert e.is_cuda and tuple(e.shape) == (2, 3)
    assert ember.full((2,), 7, device="cuda").tolist() == [7, 7]
    assert ember.eye(3, device="cuda").sum().item() == 3
    assert ember.linspace(0, 1, 5, device="cuda").tolist() == [0, 0.25, 0.5, 0.75, 1]


def test_cuda_module_functions():
    assert ember.cuda.is_available() and ember.cuda.device_count() >= 1
    assert isinstance(ember.cuda.get_device_name(0), str)
    before = ember.cuda.memory_allocated()
    x = ember.zeros(1 << 20, device="cuda")
    assert ember.cuda.memory_allocated() >= before + 4 * (1 << 20)
    del x
    ember.cuda.synchronize()
    ember.cuda.empty_cache()
    assert ember.cuda.memory_reserved() >= ember.cuda.memory_allocated()


def test_save_and_load_cuda_tensors():
    model = nn.Linear(4, 3).cuda()
    buffer = io.BytesIO()
    ember.save(model.state_dict(), buffer)
    buffer.seek(0)
    on_gpu = ember.load(buffer)
    assert on_gpu["weight"].is_cuda
    assert ember.equal(on_gpu["weight"], model.weight.detach())
    buffer.seek(0)
    on_cpu = ember.load(buffer, map_location="cpu")
    assert not on_cpu["weight"].is_cuda
    assert on_cpu["weight"].tolist() == model.weight.detach().cpu().tolist()


def test_autocast_and_grad_scaler():
    model = nn.Linear(8, 4).cuda()
    x = ember.randn(16, 8, device="cuda")
    scaler = ember.amp.GradScaler("cuda")
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    with ember.autocast("cuda"):
        out = model(x)
        assert out.dtype == ember.float16
        loss = out.float().pow(2).mean()
    scaler.scale(loss).backward()
    assert model.weight.grad.dtype == ember.float32
    before = model.weight.detach().clone()
    scaler.step(opt)
    scaler.update()
    # SGD on the unscaled gradient of mean(out**2): 2 * out^T x / numel
    expected = before - 0.1 * 2 * (out.float().t() @ x) / out.numel()
    assert_close(model.weight.detach(), expected, rtol=1e-2, atol=1e-3)


def test_loader_with_pin_memory_feeds_the_gpu():
    data = ember.utils.data.TensorDataset(ember.arange(12.0).reshape(6, 2), ember.arange(6))
    loader = ember.utils.data.DataLoader(data, batch_size=4, pin_memory=True)
    seen = []
    for x, _labels in loader:
        seen.append(x.to("cuda", non_blocking=True).sum().item())
    assert seen == [sum(range(8)), sum(range(8, 12))]


def test_activation_checkpointing_on_cuda():
    from ember.utils.checkpoint import checkpoint

    layer = nn.Sequential(nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 6)).cuda()
    x = ember.randn(3, 6, device="cuda", requires_grad=True)
    checkpoint(layer, x, use_reentrant=False).sum().backward()
    with_checkpoint = [p.grad.clone() for p in layer.parameters()] + [x.grad.clone()]
    layer.zero_grad()
    x.grad = None
    layer(x).sum().backward()
    plain = [p.grad for p in layer.parameters()] + [x.grad]
    for a, b in zip(with_checkpoint, plain):
        assert a.is_cuda
        assert_close(a, b)


def test_compiled_model_on_cuda_matches_eager():
    model = _mlp().cuda()
    x = ember.randn(8, 20, device="cuda")
    compiled = ember.compile(model)
    out = compiled(x)
    assert out.is_cuda
    assert_close(out, model(x), rtol=1e-5, atol=1e-6)


def test_sparse_embedding_gradient_on_cuda():
    emb = nn.Embedding(10, 3, sparse=True).cuda()
    emb(ember.tensor([1, 1, 4], device="cuda")).sum().backward()
    grad = emb.weight.grad
    assert grad.is_sparse and grad.is_cuda
    dense = grad.to_dense().cpu().numpy()
    expected = np.zeros((10, 3), np.float32)
    expected[1] = 2
    expected[4] = 1
    np.testing.assert_array_equal(dense, expected)


def test_errors_name_the_devices():
    a = ember.ones(2, device="cuda")
    b = ember.ones(2)
    with pytest.raises(RuntimeError, match="cuda.*cpu|cpu.*cuda"):
        ember.add(a, b)
    with pytest.raises(RuntimeError, match="cuda.*cpu|cpu.*cuda"):
        ember.matmul(ember.ones(2, 2, device="cuda"), ember.ones(2, 2))
    # the ops that reached a CuPy TypeError on the first GPU run (docs/gpu.md)
    logits, labels = ember.randn(4, 3, device="cuda"), ember.tensor([0, 2, 1, 0])
    for call in (lambda: ember.where(ember.ones(2, dtype=ember.bool), a, 0.0),
                 lambda: F.cross_entropy(logits, labels),
                 lambda: F.nll_loss(logits, labels),
                 lambda: F.batch_norm(logits, ember.zeros(3), ember.ones(3), training=True),
                 lambda: F.max_unpool2d(ember.ones(1, 1, 2, 2, device="cuda"),
                                        ember.zeros(1, 1, 2, 2, dtype=ember.int64), 2)):
        with pytest.raises(RuntimeError, match="cuda.*cpu|cpu.*cuda"):
            call()
