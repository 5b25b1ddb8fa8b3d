"""An LSTM layer's forward and backward loops on all threads at once
(ops/_native_lstm_threads.py): the same numbers as the one-step-at-a-time loops for
padded and packed batches, both directions and uneven shares of the hidden units; the
cases they leave to those loops; and no thread left waiting when another fails."""

import time

import numpy as np
import pytest

import ember
from ember.nn.utils.rnn import pack_padded_sequence
from ember.ops import _native as native
from ember.ops import _native_lstm_threads as threaded
from ember.ops import _workers

pytestmark = pytest.mark.skipif(
    not native.available() or _workers._compiled_loops() is None,
    reason="needs numba and the CBLAS poll loops")


@pytest.fixture
def threads(request, monkeypatch):
    before = ember.get_num_threads()
    ember.set_num_threads(request.param)
    monkeypatch.setattr(threaded, "MIN_UNITS", 4)
    yield request.param
    ember.set_num_threads(before)


def _both_ways(monkeypatch, run, backward: bool = True):
    """`run()` with the threaded loops (which must have been taken: the forward's, and
    the backward's if `backward`) and without them."""
    taken = {"forward": [], "backward": []}
    for name, calls in taken.items():
        real = getattr(threaded, name)
        monkeypatch.setattr(threaded, name, lambda *args, real=real, calls=calls:
                            calls.append(real(*args)) or calls[-1])
    with_threads = run()
    for name, calls in taken.items():
        if name == "forward" or backward:
            assert calls and all(c is not None for c in calls), name
        monkeypatch.setattr(threaded, name, lambda *args: None)
    return with_threads, run()


@pytest.mark.parametrize("threads", [2, 3], indirect=True)
@pytest.mark.parametrize("hidden", [13, 40])
@pytest.mark.parametrize("transpose_from", [1, 10**9])   # each layout of the weight shares
def test_threaded_forward_and_gradients_equal_the_step_loop(threads, hidden, transpose_from,
                                                            monkeypatch):
    monkeypatch.setattr(threaded, "TRANSPOSE_MIN_STEPS", transpose_from)
    ember.manual_seed(0)
    lstm = ember.nn.LSTM(7, hidden, num_layers=2, bidirectional=True)
    x = ember.randn(9, 5, 7)
    state = (ember.randn(4, 5, hidden), ember.randn(4, 5, hidden))

    weights = [ember.randn(9, 5, 2 * hidden), ember.randn(4, 5, hidden)]

    def run():
        # (weighted sums: contiguous gradients, which the native loops take)
        lstm.zero_grad()
        out, (h, c) = lstm(x, state)
        ((out * weights[0]).sum() + h.square().sum() + (c * weights[1]).sum()).backward()
        return [out, h, c] + [p.grad for p in lstm.parameters()]

    for got, want in zip(*_both_ways(monkeypatch, run)):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("threads", [2], indirect=True)
def test_packed_sequences_keep_each_sequences_last_state(threads, monkeypatch):
    ember.manual_seed(1)
    lstm = ember.nn.LSTM(3, 16, bidirectional=True)
    x = ember.randn(6, 4, 3)
    packed = pack_padded_sequence(x, [6, 4, 4, 1])

    weight = ember.randn(2, 4, 16)

    def run():
        lstm.zero_grad()
        out, (h, c) = lstm(packed)
        (out.data.square().sum() + h.square().sum() + (c * weight).sum()).backward()
        return [out.data, h, c] + [p.grad for p in lstm.parameters()]

    for got, want in zip(*_both_ways(monkeypatch, run)):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("threads", [1, 2], indirect=True)
def test_cases_left_to_the_step_loop(threads):
    rng = np.random.default_rng(2)
    hidden = 8
    xw = rng.standard_normal((6, 4 * hidden)).astype(np.float32)
    w = rng.standard_normal((4 * hidden, hidden)).astype(np.float32)
    h0, c0 = np.zeros((2, hidden), np.float32), np.zeros((2, hidden), np.float32)
    arrays = [np.empty_like(xw)] + [np.empty((6, hidden), np.float32) for _ in range(4)]
    steps = [(0, 2, 2), (2, 4, 2), (4, 6, 2)]
    got = threaded.forward(xw, w, h0.copy(), c0.copy(), steps, *arrays)
    assert (got is None) == (threads == 1)   # one thread: nothing to share
    assert threaded.forward(xw.astype(np.float64), w, h0, c0, steps, *arrays) is None
    dgates = np.empty_like(xw)
    back = threaded.backward(arrays[4], h0.copy(), c0.copy(), arrays[0], arrays[3], arrays[2],
                             dgates, w, steps)
    assert (back is None) == (threads == 1)
    threaded.MIN_UNITS = 5                     # (the fixture restores it)
    assert threaded.forward(xw, w, h0, c0, steps, *arrays) is None   # 4 units a thread
    assert threaded.backward(arrays[4], h0.copy(), c0.copy(), arrays[0], arrays[3], arrays[2],
                             dgates, w, steps) is None


@pytest.mark.parametrize("threads", [2], indirect=True)
@pytest.mark.parametrize("failing", [0, 1])
def test_a_failing_share_stops_the_others_waiting(threads, failing, monkeypatch):
    class Failing:
        """One share (the caller's, 0, or the worker's, 1) fails at once; the other waits
        for it, as the kernel's barrier does, until the abort flag is raised."""

        def has_run(self):
            return False

        def __call__(self, *args):
            me, flags = args[15], args[17]
            if me == failing:
                raise ValueError(f"share {failing} failed")
            deadline = time.monotonic() + 10
            while flags[threaded._ABORT] == 0:
                assert time.monotonic() < deadline, "a share was left waiting"
                time.sleep(0.001)

    monkeypatch.setattr(threaded, "_lstm_share", Failing())
    hidden = 8
    xw = np.zeros((2, 4 * hidden), np.float32)
    arrays = [np.empty_like(xw)] + [np.empty((2, hidden), np.float32) for _ in range(4)]
    h0 = np.zeros((2, hidden), np.float32)
    with pytest.raises(ValueError, match=f"share {failing} failed"):
        threaded.forward(xw, np.zeros((4 * hidden, hidden), np.float32), h0, h0,
                         [(0, 2, 2)], *arrays)


@pytest.mark.parametrize("steps, flag", [(1, threaded._TRANS), (100, threaded._NO_TRANS)])
def test_a_threads_weight_share_holds_its_units_rows_gate_by_gate(steps, flag):
    hidden = 20
    w_hh = np.random.default_rng(0).standard_normal((4 * hidden, hidden)).astype(np.float32)
    share, got_flag = threaded._weight_share(w_hh, slice(3, 10), steps)
    rows = np.concatenate([w_hh[q * hidden + 3:q * hidden + 10] for q in range(4)])  # (28, H)
    assert got_flag == flag and share.flags.c_contiguous
    np.testing.assert_array_equal(share, rows.T if flag == threaded._NO_TRANS else rows)
