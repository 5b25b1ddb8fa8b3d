"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode — as context managers,
decorators (with and without parentheses, on generators) and plain calls; and, as in
PyTorch, one mode per thread."""

import threading

import pytest

import ember
from ember import autograd

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


@pytest.fixture(autouse=True)
def _restore_grad_mode():
    yield
    assert ember.is_grad_enabled(), "a test left grad recording off"
    assert not ember.is_inference_mode_enabled()


def x_requiring_grad():
    return ember.tensor([1.0, 2.0], requires_grad=True)


def test_no_grad_context():
    x = x_requiring_grad()
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        y = x * 2
        with ember.no_grad():  # nesting
            assert not ember.is_grad_enabled()
        assert not ember.is_grad_enabled()
    assert ember.is_grad_enabled()
    assert y.grad_fn is None and not y.requires_grad
    assert (x * 2).requires_grad


def test_no_grad_restores_after_an_exception():
    with pytest.raises(ValueError):
        with ember.no_grad():
            raise ValueError("boom")
    assert ember.is_grad_enabled()


def test_no_grad_decorator_with_and_without_parentheses():
    @ember.no_grad()
    def f(t):
        return ember.is_grad_enabled(), t * 2

    @ember.no_grad
    def g(t):
        return ember.is_grad_enabled(), t * 2

    for fn in (f, g):
        enabled, y = fn(x_requiring_grad())
        assert enabled is False and y.grad_fn is None
    assert f.__name__ == "f" and g.__name__ == "g"


def test_decorated_generator_runs_each_step_in_the_mode():
    outside = []

    @ember.no_grad()
    def gen(n):
        for i in range(n):
            received = yield ember.is_grad_enabled(), i
            if received is not None:
                yield received
        return "done"

    it = gen(2)
    assert next(it) == (False, 0)
    outside.append(ember.is_grad_enabled())  # between steps the caller's mode holds
    assert it.send("hello") == "hello"
    assert next(it) == (False, 1)
    with pytest.raises(StopIteration) as stop:
        next(it)
    assert stop.value.value == "done"
    assert outside == [True]
    assert list(gen(3)) == [(False, 0), (False, 1), (False, 2)]


def test_decorated_generator_passes_exceptions_in():
    @ember.no_grad()
    def gen():
        try:
            yield 1
        except KeyError:
            yield ember.is_grad_enabled()

    it = gen()
    next(it)
    assert it.throw(KeyError("k")) is False
    it.close()


def test_enable_grad():
    x = x_requiring_grad()
    with ember.no_grad():
        with ember.enable_grad():
            assert ember.is_grad_enabled()
            y = x * 2
        assert not ember.is_grad_enabled()

        @ember.enable_grad
        def f():
            return x * 3

        assert f().requires_grad
        assert ember.enable_grad()(lambda: ember.is_grad_enabled())()
    assert y.requires_grad


def test_set_grad_enabled_call_context_and_decorator():
    ember.set_grad_enabled(False)  # acts at once
    assert not ember.is_grad_enabled()
    ember.set_grad_enabled(True)
    assert ember.is_grad_enabled()
    with ember.set_grad_enabled(False):
        assert not ember.is_grad_enabled()
        with ember.set_grad_enabled(True):
            assert ember.is_grad_enabled()
        assert not ember.is_grad_enabled()
    assert ember.is_grad_enabled()

    @ember.set_grad_enabled(False)
    def f():
        return ember.is_grad_enabled()

    assert ember.is_grad_enabled()  # decorating changed nothing
    assert f() is False
    assert ember.is_grad_enabled()


def test_inference_mode():
    x = x_requiring_grad()
    assert not ember.is_inference_mode_enabled()
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled() and not ember.is_grad_enabled()
        y = x * 2
        with ember.inference_mode(False):
            assert not ember.is_inference_mode_enabled() and ember.is_grad_enabled()
        with ember.enable_grad():
            assert ember.is_grad_enabled()
        assert ember.is_inference_mode_enabled()
    assert y.grad_fn is None and not y.requires_grad

    @ember.inference_mode
    def f():
        return ember.is_inference_mode_enabled(), ember.is_grad_enabled()

    @ember.inference_mode(mode=True)
    def g():
        return ember.is_inference_mode_enabled()

    assert f() == (True, False) and g() is True
    assert not x.is_inference()


def test_autograd_namespace_exports():
    assert autograd.no_grad is ember.no_grad
    assert autograd.enable_grad is ember.enable_grad
    assert autograd.set_grad_enabled is ember.set_grad_enabled
    assert autograd.inference_mode is ember.inference_mode
    assert autograd.is_grad_enabled is ember.is_grad_enabled
    assert autograd.is_inference_mode_enabled is ember.is_inference_mode_enabled


def test_backward_under_no_grad_still_works():
    x = x_requiring_grad()
    y = (x * x).sum()
    with ember.no_grad():
        y.backward()
    assert x.grad.tolist() == [2.0, 4.0]


@needs_torch
def test_modes_match_torch():
    def trace(lib):
        log = []
        with lib.no_grad():
            log.append(lib.is_grad_enabled())
            with lib.inference_mode(False):
                log.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
            with lib.set_grad_enabled(True):
                log.append(lib.is_grad_enabled())
        with lib.inference_mode():
            log.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
            with lib.no_grad():
                with lib.inference_mode(False):
                    log.append(lib.is_grad_enabled())

        @lib.set_grad_enabled(False)
        def f():
            return lib.is_grad_enabled()

        log.append((lib.is_grad_enabled(), f(), lib.is_grad_enabled()))
        return log

    assert trace(ember) == trace(torch)


# ---------------------------------------------------------------------------
# one mode per thread

_LIBS = ["ember", "torch"]


def _lib(name):
    return ember if name == "ember" else pytest.importorskip("torch")


def _run_threads(*targets):
    """Run each target in its own thread; re-raise the first error of any."""
    errors = []

    def guarded(fn):
        def run():
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                errors.append(exc)
        return run

    threads = [threading.Thread(target=guarded(fn)) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]


_OFF_MODES = {
    "no_grad": lambda lib: lib.no_grad(),
    "inference_mode": lambda lib: lib.inference_mode(),
    "set_grad_enabled": lambda lib: lib.set_grad_enabled(False),
}


@pytest.mark.parametrize("lib_name", _LIBS)
@pytest.mark.parametrize("mode", sorted(_OFF_MODES))
def test_a_thread_without_grad_does_not_stop_recording_in_another(lib_name, mode):
    lib = _lib(lib_name)
    barrier = threading.Barrier(2, timeout=20)
    seen = {}

    def inference():
        with _OFF_MODES[mode](lib):
            barrier.wait()  # 1: the other thread records while this one is in the mode
            barrier.wait()  # 2: it is done
            y = lib.ones(2, requires_grad=True) * 2
            seen["inference"] = (lib.is_grad_enabled(), y.requires_grad,
                                 lib.is_inference_mode_enabled())
        seen["inference after"] = lib.is_grad_enabled()

    def training():
        barrier.wait()
        w = lib.ones(2, requires_grad=True)
        loss = (w * 3).sum()
        loss.backward()
        seen["training"] = (lib.is_grad_enabled(), loss.requires_grad,
                            lib.is_inference_mode_enabled(), w.grad.tolist())
        barrier.wait()

    _run_threads(inference, training)
    assert seen["training"] == (True, True, False, [3.0, 3.0])
    assert seen["inference"] == (False, False, mode == "inference_mode")
    assert seen["inference after"] is True


@pytest.mark.parametrize("lib_name", _LIBS)
def test_a_new_thread_starts_with_recording_on(lib_name):
    lib = _lib(lib_name)
    seen = []

    def child():
        seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled(),
                     (lib.ones(1, requires_grad=True) * 2).requires_grad))

    with lib.no_grad():
        _run_threads(child)
    with lib.inference_mode():
        _run_threads(child)
    assert seen == [(True, False, True)] * 2


@pytest.mark.parametrize("lib_name", _LIBS)
def test_set_grad_enabled_as_a_call_stays_in_its_thread(lib_name):
    lib = _lib(lib_name)
    barrier = threading.Barrier(2, timeout=20)
    seen = {}

    def switches_off():
        lib.set_grad_enabled(False)
        barrier.wait()
        barrier.wait()
        seen["off"] = lib.is_grad_enabled()
        lib.set_grad_enabled(True)

    def reads():
        barrier.wait()
        seen["other"] = lib.is_grad_enabled()
        barrier.wait()

    _run_threads(switches_off, reads)
    assert seen == {"off": False, "other": True}


@pytest.mark.parametrize("lib_name", _LIBS)
def test_saved_tensors_hooks_stay_in_their_thread(lib_name):
    lib = _lib(lib_name)
    barrier = threading.Barrier(2, timeout=20)
    packed = []

    def hooked():
        with lib.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t,
                                                    lambda t: t):
            barrier.wait()
            barrier.wait()

    def plain():
        barrier.wait()
        x = lib.ones(2, requires_grad=True)
        (x * x).sum().backward()
        barrier.wait()

    _run_threads(hooked, plain)
    assert packed == []
