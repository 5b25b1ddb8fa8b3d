"""PyTorch's tutorials, in our words, run through ``import ember as torch`` with tiny data.

The "Learn the basics" series (tensors, datasets and loaders on FakeData, transforms,
building a model, autograd, the optimization loop, save and load), "What is torch.nn
really?" (logistic regression by hand, then nn.Module, optim, DataLoader, a CNN built from
nn.Sequential and a Lambda layer) and the examples_tensor / examples_autograd / examples_nn
programs (fitting sin with a cubic: by hand, with autograd, with a custom
LegendrePolynomial3 Function, with nn.Sequential + Flatten(0, 1), with optim, a dynamic
net).  Each program is a function of the library, so where PyTorch is installed it also runs
on PyTorch from the same initial weights and gives the same losses.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

import ember

from ._programs import assert_same_run, decreased, load_state, run_both, state_of


def data(seed: int, *shape, kind: str = "normal"):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) if kind == "normal" else rng.random(shape)).astype(
        np.float32)


# ----------------------------------------------------------------------
# Learn the basics: tensors


def test_basics_tensors():
    torch = ember
    data_ = [[1, 2], [3, 4]]
    x_data = torch.tensor(data_)
    x_np = torch.from_numpy(np.array(data_))
    assert x_np.dtype == torch.int64 and torch.equal(x_data, x_np)
    x_ones = torch.ones_like(x_data)
    x_rand = torch.rand_like(x_data, dtype=torch.float)
    assert x_ones.tolist() == [[1, 1], [1, 1]] and x_rand.dtype == torch.float32
    shape = (2, 3,)
    assert torch.zeros(shape).shape == torch.Size([2, 3])
    tensor = torch.ones(4, 4)
    tensor[:, 1] = 0
    assert tensor[0].tolist() == [1, 0, 1, 1] and tensor[..., -1].sum().item() == 4
    t1 = torch.cat([tensor, tensor, tensor], dim=1)
    assert t1.shape == (4, 12)
    y1 = tensor @ tensor.T
    y2 = tensor.matmul(tensor.T)
    y3 = torch.rand_like(y1)
    torch.matmul(tensor, tensor.T, out=y3)
    assert torch.equal(y1, y2) and torch.equal(y1, y3) and y1[0, 0].item() == 3
    z1 = tensor * tensor
    z3 = torch.rand_like(tensor)
    torch.mul(tensor, tensor, out=z3)
    assert torch.equal(z1, tensor.mul(tensor)) and torch.equal(z1, z3)
    agg = tensor.sum()
    assert isinstance(agg.item(), float) and agg.item() == 12.0
    tensor.add_(5)
    assert tensor[0, 0].item() == 6.0
    # the NumPy bridge shares memory both ways
    t = torch.ones(5)
    n = t.numpy()
    t.add_(1)
    assert n.tolist() == [2.0] * 5
    n = np.ones(5)
    t = torch.from_numpy(n)
    np.add(n, 1, out=n)
    assert t.tolist() == [2.0] * 5


# ----------------------------------------------------------------------
# Learn the basics: datasets, dataloaders, transforms (FakeData stands in for FashionMNIST)


def test_basics_datasets_dataloaders_transforms():
    torch = ember
    from ember.utils.data import DataLoader, Dataset
    from ember.vision import datasets
    from ember.vision.transforms import Lambda, ToTensor

    training_data = datasets.FakeData(
        size=20, image_size=(1, 28, 28), num_classes=10, transform=ToTensor(),
        target_transform=Lambda(
            lambda y: torch.zeros(10, dtype=torch.float).scatter_(0, torch.tensor(y), value=1)))
    img, label = training_data[0]
    assert img.shape == (1, 28, 28) and img.dtype == torch.float32
    assert 0.0 <= img.min().item() and img.max().item() <= 1.0
    assert label.shape == (10,) and label.sum().item() == 1.0  # one-hot

    sample_idx = torch.randint(len(training_data), size=(1,)).item()
    assert 0 <= sample_idx < 20

    class CustomImageDataset(Dataset):
        def __init__(self, images, labels, transform=None, target_transform=None):
            self.images, self.labels = images, labels
            self.transform, self.target_transform = transform, target_transform

        def __len__(self):
            return len(self.labels)

        def __getitem__(self, idx):
            image, label = self.images[idx], self.labels[idx]
            if self.transform:
                image = self.transform(image)
            if self.target_transform:
                label = self.target_transform(label)
            return image, label

    images = (data(0, 12, 28, 28, kind="uniform") * 255).astype(np.uint8)[..., None]
    custom = CustomImageDataset(images, list(range(12)), transform=ToTensor())
    train_dataloader = DataLoader(custom, batch_size=4, shuffle=True)
    train_features, train_labels = next(iter(train_dataloader))
    assert train_features.size() == torch.Size([4, 1, 28, 28])
    assert train_labels.size() == torch.Size([4]) and train_labels.dtype == torch.int64
    assert train_features[0].squeeze().shape == (28, 28)
    assert sum(len(y) for _, y in train_dataloader) == 12


# ----------------------------------------------------------------------
# Learn the basics: build the model, autograd, optimization loop, save and load


def neural_network(torch):
    nn = torch.nn

    class NeuralNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.linear_relu_stack = nn.Sequential(
                nn.Linear(28 * 28, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                nn.Linear(64, 10))

        def forward(self, x):
            x = self.flatten(x)
            return self.linear_relu_stack(x)

    return NeuralNetwork()


def optimization_loop(torch, state=None):
    """The tutorial's train_loop/test_loop on 64 fake images, 8 epochs."""
    from_ember = torch is ember
    if from_ember:
        from ember.utils.data import DataLoader, TensorDataset
    else:
        from torch.utils.data import DataLoader, TensorDataset
    torch.manual_seed(0)
    model = neural_network(torch)
    load_state(torch, model, state)
    images, labels = data(1, 64, 1, 28, 28, kind="uniform"), np.arange(64) % 10
    images[np.arange(64), 0, 2 * labels] = 1.0  # a bright row per class: learnable
    x, y = torch.tensor(images), torch.tensor(labels)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=False)
    loss_fn = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []

    def train_loop():
        model.train()
        for X, Y in loader:
            loss = loss_fn(model(X), Y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()

    def test_loop():
        model.eval()
        test_loss, correct = 0.0, 0
        with torch.no_grad():
            for X, Y in loader:
                pred = model(X)
                test_loss += loss_fn(pred, Y).item()
                correct += (pred.argmax(1) == Y).type(torch.float).sum().item()
        return test_loss / len(loader), correct / len(loader.dataset)

    first = state_of(model)
    for _ in range(8):
        train_loop()
        loss, accuracy = test_loop()
        losses.append(loss)
    return {"losses": losses, "accuracy": [accuracy], "state": first}


def test_basics_build_model():
    torch = ember
    model = neural_network(torch)
    X = torch.rand(1, 28, 28)
    logits = model(X)
    pred_probab = torch.nn.Softmax(dim=1)(logits)
    y_pred = pred_probab.argmax(1)
    assert logits.shape == (1, 10) and abs(pred_probab.sum().item() - 1) < 1e-6
    assert 0 <= y_pred.item() < 10
    names = [name for name, _ in model.named_parameters()]
    assert names[0] == "linear_relu_stack.0.weight" and len(names) == 6
    assert "(flatten): Flatten(start_dim=1, end_dim=-1)" in repr(model)


def test_basics_autograd():
    torch = ember
    x = torch.ones(5)
    y = torch.zeros(3)
    torch.manual_seed(0)
    w = torch.randn(5, 3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    z = torch.matmul(x, w) + b
    loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
    assert repr(z.grad_fn).startswith("<AddBackward0 object at")
    assert loss.grad_fn is not None  # (PyTorch names it BinaryCrossEntropyWithLogitsBackward0;
    # ember's composite loss shows its last step: docs/differences.md)
    loss.backward()
    sig = 1 / (1 + np.exp(-z.detach().numpy()))
    np.testing.assert_allclose(b.grad.numpy(), sig / 3, rtol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), np.outer(np.ones(5), sig / 3), rtol=1e-5)
    with torch.no_grad():
        assert not (torch.matmul(x, w) + b).requires_grad
    assert not z.detach().requires_grad
    # the Jacobian-vector product section: gradients accumulate until zeroed
    inp = torch.eye(4, 5, requires_grad=True)
    out = (inp + 1).pow(2).t()
    out.backward(torch.ones_like(out), retain_graph=True)
    first = inp.grad.clone()
    out.backward(torch.ones_like(out), retain_graph=True)
    np.testing.assert_allclose(inp.grad.numpy(), 2 * first.numpy())
    inp.grad.zero_()
    out.backward(torch.ones_like(out), retain_graph=True)
    np.testing.assert_allclose(inp.grad.numpy(), first.numpy())
    np.testing.assert_allclose(first.numpy(), 2 * (np.eye(4, 5) + 1))


def test_basics_optimization_loop_learns():
    run = optimization_loop(ember)
    assert all(b < a for a, b in zip(run["losses"], run["losses"][1:], strict=False))
    assert decreased(run["losses"], 0.95) and run["accuracy"][0] > 0.5


def test_basics_optimization_loop_matches_pytorch():
    assert_same_run(*run_both(optimization_loop), rtol=1e-4)


class SmallNet(ember.nn.Module):
    """A module-level class, so that ``torch.save(model)`` can pickle it."""

    def __init__(self):
        super().__init__()
        self.stack = ember.nn.Sequential(ember.nn.Flatten(), ember.nn.Linear(28 * 28, 10))

    def forward(self, x):
        return self.stack(x)


def test_basics_save_and_load(tmp_path):
    torch = ember
    model = SmallNet()
    torch.save(model.state_dict(), tmp_path / "model_weights.pth")
    fresh = SmallNet()
    fresh.load_state_dict(torch.load(tmp_path / "model_weights.pth", weights_only=True))
    fresh.eval()
    x = torch.rand(2, 28, 28)
    assert torch.equal(fresh(x), model.eval()(x))
    torch.save(model, tmp_path / "model.pth")
    whole = torch.load(tmp_path / "model.pth", weights_only=False)
    assert torch.equal(whole(x), model(x))


# ----------------------------------------------------------------------
# What is torch.nn really?


def nn_really(torch, state=None):
    """Logistic regression by hand, then with nn/optim/DataLoader, then the CNN."""
    F = torch.nn.functional
    nn = torch.nn
    if torch is ember:
        from ember.utils.data import DataLoader, TensorDataset
    else:
        from torch.utils.data import DataLoader, TensorDataset
    state = state or {}
    images, labels = 0.1 * data(2, 96, 784, kind="uniform"), np.arange(96) % 10
    for k in range(10):  # a bright band of pixels per class: learnable
        images[labels == k, 78 * k:78 * k + 78] = 1.0
    x_train, y_train = torch.tensor(images), torch.tensor(labels)
    x_valid, y_valid = x_train[:32], y_train[:32]
    bs, lr, record = 32, 0.5, {}

    # 1. from scratch
    torch.manual_seed(0)
    weights = torch.randn(784, 10) / math.sqrt(784)
    if "weights" in state:
        weights = torch.tensor(state["weights"])
    weights.requires_grad_()
    bias = torch.zeros(10, requires_grad=True)
    first = {"weights": weights.detach().numpy().copy()}

    def log_softmax(x):
        return x - x.exp().sum(-1).log().unsqueeze(-1)

    def model(xb):
        return log_softmax(xb @ weights + bias)

    def nll(input, target):
        return -input[range(target.shape[0]), target].mean()

    def accuracy(out, yb):
        return (torch.argmax(out, dim=1) == yb).float().mean()

    losses = []
    for _ in range(3):
        for i in range((96 - 1) // bs + 1):
            xb, yb = x_train[i * bs:i * bs + bs], y_train[i * bs:i * bs + bs]
            loss = nll(model(xb), yb)
            loss.backward()
            with torch.no_grad():
                weights -= weights.grad * lr
                bias -= bias.grad * lr
                weights.grad.zero_()
                bias.grad.zero_()
        losses.append(F.cross_entropy(xb @ weights + bias, yb).item())
    record["scratch"] = losses
    record["scratch_acc"] = [accuracy(model(x_valid), y_valid).item()]

    # 2. nn.Module + optim + DataLoader with a fit loop and validation
    class MnistLogistic(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(784, 10)

        def forward(self, xb):
            return self.lin(xb)

    def loss_batch(model, loss_func, xb, yb, opt=None):
        loss = loss_func(model(xb), yb)
        if opt is not None:
            loss.backward()
            opt.step()
            opt.zero_grad()
        return loss.item(), len(xb)

    def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
        history = []
        for _ in range(epochs):
            model.train()
            for xb, yb in train_dl:
                loss_batch(model, loss_func, xb, yb, opt)
            model.eval()
            with torch.no_grad():
                losses, nums = zip(*[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
            history.append(np.sum(np.multiply(losses, nums)) / np.sum(nums))
        return history

    train_dl = DataLoader(TensorDataset(x_train, y_train), batch_size=bs)
    valid_dl = DataLoader(TensorDataset(x_valid, y_valid), batch_size=bs * 2)
    torch.manual_seed(0)
    logistic = MnistLogistic()
    load_state(torch, logistic, state.get("logistic"))
    first["logistic"] = state_of(logistic)
    record["logistic"] = fit(3, logistic, F.cross_entropy,
                             torch.optim.SGD(logistic.parameters(), lr=lr), train_dl, valid_dl)

    # 3. the CNN: nn.Sequential with a Lambda layer, and a wrapped DataLoader
    class Lambda(nn.Module):
        def __init__(self, func):
            super().__init__()
            self.func = func

        def forward(self, x):
            return self.func(x)

    class WrappedDataLoader:
        def __init__(self, dl, func):
            self.dl, self.func = dl, func

        def __len__(self):
            return len(self.dl)

        def __iter__(self):
            for b in self.dl:
                yield self.func(*b)

    def preprocess(x, y):
        return x.view(-1, 1, 28, 28), y

    torch.manual_seed(0)
    cnn = nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(16, 16, kernel_size=3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(16, 10, kernel_size=3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), Lambda(lambda x: x.view(x.size(0), -1)))
    load_state(torch, cnn, state.get("cnn"))
    first["cnn"] = state_of(cnn)
    opt = torch.optim.SGD(cnn.parameters(), lr=0.1, momentum=0.9)
    record["cnn"] = fit(4, cnn, F.cross_entropy, opt, WrappedDataLoader(train_dl, preprocess),
                        WrappedDataLoader(valid_dl, preprocess))
    record["state"] = first
    return record


def test_nn_really_learns():
    run = nn_really(ember)
    for key in ("scratch", "logistic", "cnn"):
        assert decreased(run[key]), key
    assert run["scratch_acc"][0] > 0.2


def test_nn_really_matches_pytorch():
    assert_same_run(*run_both(nn_really), rtol=2e-4, atol=1e-5)


# ----------------------------------------------------------------------
# examples_tensor / examples_autograd / examples_nn: fit sin(x) with a cubic


def fit_sin(torch, state=None):
    """Every variant of the cubic fit; returns the final loss of each."""
    nn = torch.nn
    dtype = torch.float
    x = torch.linspace(-math.pi, math.pi, 200, dtype=dtype)
    y = torch.sin(x)
    state = state or {"abcd": data(3, 4)}
    record = {"state": state}

    # polynomial_tensor: gradients by hand
    a, b, c, d = (torch.tensor(v) for v in state["abcd"])
    lr = 1e-6
    for _ in range(300):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum().item()
        grad_y_pred = 2.0 * (y_pred - y)
        grad_a = grad_y_pred.sum()
        grad_b = (grad_y_pred * x).sum()
        grad_c = (grad_y_pred * x ** 2).sum()
        grad_d = (grad_y_pred * x ** 3).sum()
        a, b, c, d = a - lr * grad_a, b - lr * grad_b, c - lr * grad_c, d - lr * grad_d
    record["tensor"] = [loss]

    # polynomial_autograd
    a, b, c, d = (torch.tensor(v, requires_grad=True) for v in state["abcd"])
    for _ in range(300):
        loss = (a + b * x + c * x ** 2 + d * x ** 3 - y).pow(2).sum()
        loss.backward()
        with torch.no_grad():
            for p in (a, b, c, d):
                p -= lr * p.grad
                p.grad = None
    record["autograd"] = [loss.item()]

    # polynomial_custom_function: y = a + b * P3(c + d * x)
    class LegendrePolynomial3(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input ** 3 - 3 * input)

        @staticmethod
        def backward(ctx, grad_output):
            (input,) = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input ** 2 - 1)

    a = torch.full((), 0.0, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, dtype=dtype, requires_grad=True)
    P3 = LegendrePolynomial3.apply
    losses = []
    for _ in range(300):
        loss = (a + b * P3(c + d * x) - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            for p in (a, b, c, d):
                p -= 5e-6 * p.grad
                p.grad = None
    record["custom_function"] = [losses[0], losses[-1]]

    # polynomial_nn: Linear(3, 1) + Flatten(0, 1) on (x, x^2, x^3)
    p = torch.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1))
    load_state(torch, model, state.get("nn"))
    record["state"] = dict(state, nn=state_of(model))
    loss_fn = nn.MSELoss(reduction="sum")
    losses = []
    for _ in range(300):
        loss = loss_fn(model(xx), y)
        losses.append(loss.item())
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for param in model.parameters():
                param -= 1e-6 * param.grad
    record["nn"] = [losses[0], losses[-1]]
    linear_layer = model[0]
    record["nn_coefficients"] = [linear_layer.bias.item(), *linear_layer.weight[:, 0:3][0]
                                 .tolist()]

    # polynomial_optim: RMSprop
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1))
    load_state(torch, model, state.get("nn"))
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(300):
        loss = loss_fn(model(xx), y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    record["optim"] = [losses[0], losses[-1]]
    return record


def dynamic_net(torch, state=None):
    """The dynamic_net example: a cubic plus a random number (4 or 5) of reused x^4 terms."""

    class DynamicNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Parameter(torch.randn(()))
            self.b = torch.nn.Parameter(torch.randn(()))
            self.c = torch.nn.Parameter(torch.randn(()))
            self.d = torch.nn.Parameter(torch.randn(()))
            self.e = torch.nn.Parameter(torch.randn(()))

        def forward(self, x, n):
            y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
            for exp in range(4, n):
                y = y + self.e * x ** exp
            return y

    x = torch.linspace(-math.pi, math.pi, 200)
    y = torch.sin(x)
    torch.manual_seed(0)
    model = DynamicNet()
    load_state(torch, model, state)
    first = state_of(model)
    criterion = torch.nn.MSELoss(reduction="sum")
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
    chooser = random.Random(0)  # the same choices on both libraries
    losses = []
    for _ in range(200):
        loss = criterion(model(x, chooser.randint(4, 6)), y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"losses": [losses[0], losses[-1]], "state": first}


def test_fit_sin_every_variant_learns():
    run = fit_sin(ember)
    assert run["custom_function"][1] < run["custom_function"][0] * 0.7
    assert run["nn"][1] < run["nn"][0] and run["optim"][1] < run["optim"][0]
    assert run["tensor"][0] == pytest.approx(run["autograd"][0], rel=1e-4)


def test_fit_sin_matches_pytorch():
    assert_same_run(*run_both(fit_sin), rtol=1e-3, atol=1e-5)


def test_dynamic_net():
    ours = dynamic_net(ember)
    assert decreased(ours["losses"])
    try:
        import torch
    except ImportError:
        return
    assert_same_run(ours, dynamic_net(torch, ours["state"]), rtol=1e-3)
