"""A 2-layer MLP trained with ember ops alone (no nn), and a long loop whose memory
stays flat: graphs are freed by reference counting, with no cycles to collect."""

import gc

import numpy as np

import ember


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _blobs(n: int = 300, seed: int = 0):
    rng = np.random.default_rng(seed)
    centers = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.5]])
    labels = rng.integers(0, 3, size=n)
    points = centers[labels] + rng.normal(scale=0.6, size=(n, 2))
    return ember.tensor(points, dtype=ember.float32), ember.tensor(labels)


def _init(shape, seed):
    rng = np.random.default_rng(seed)
    bound = 1 / np.sqrt(shape[0])
    return ember.tensor(rng.uniform(-bound, bound, size=shape).astype(np.float32),
                        requires_grad=True)


def _cross_entropy(logits, target):
    picked = logits.gather(1, target.unsqueeze(1)).squeeze(1)
    return (ember.logsumexp(logits, dim=1) - picked).mean()


def test_two_layer_mlp_learns_with_raw_ops():
    x, y = _blobs()
    w1, b1 = _init((2, 32), 1), ember.zeros(32, requires_grad=True)
    w2, b2 = _init((32, 3), 2), ember.zeros(3, requires_grad=True)
    params = [w1, b1, w2, b2]
    losses = []
    for _ in range(200):
        hidden = (x @ w1 + b1).relu()
        loss = _cross_entropy(hidden @ w2 + b2, y)
        for p in params:
            p.grad = None
        loss.backward()
        with ember.no_grad():
            for p in params:
                p -= 0.5 * p.grad
        losses.append(loss.item())
    assert losses[0] > 1.0
    assert losses[-1] < 0.25 * losses[0]
    with ember.no_grad():
        accuracy = ((x @ w1 + b1).relu() @ w2 + b2).argmax(1).eq(y).float().mean().item()
    assert accuracy > 0.9


def test_ten_thousand_steps_keep_memory_flat():
    x, y = _blobs(64)
    w1, b1 = _init((2, 16), 3), ember.zeros(16, requires_grad=True)
    w2, b2 = _init((16, 3), 4), ember.zeros(3, requires_grad=True)
    params = [w1, b1, w2, b2]
    gc.collect()
    gc.disable()  # everything must be freed by reference counting alone
    try:
        for step in range(10_000):
            loss = _cross_entropy((x @ w1 + b1).tanh() @ w2 + b2, y)
            for p in params:
                p.grad = None
            loss.backward()
            with ember.no_grad():
                for p in params:
                    p -= 0.1 * p.grad
            if step == 1000:
                rss_start = _rss_bytes()
                objects_start = len(gc.get_objects())
        rss_end = _rss_bytes()
        objects_end = len(gc.get_objects())
    finally:
        gc.enable()
    assert objects_end - objects_start < 50, (objects_start, objects_end)
    assert rss_end - rss_start < 8 * 2**20, (rss_start, rss_end)
