"""Custom ``autograd.Function``s (both styles, ctx API, in-place, errors) and gradcheck."""

import re
import warnings

import numpy as np
import pytest

import ember
from ember import autograd
from ember.autograd import Function, GradcheckError, gradcheck, gradgradcheck
from ember.autograd.function import once_differentiable

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def leaf(values, dtype=ember.float64):
    return ember.tensor(values, dtype=dtype, requires_grad=True)


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


class Cube(Function):
    """Backward written with ember ops: differentiable again."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * x * x * grad


# --- the two styles -------------------------------------------------------------------------


def test_classic_style_values_and_node():
    x = leaf([1.0, 2.0, 3.0])
    y = Square.apply(x)
    assert y.tolist() == [1.0, 4.0, 9.0]
    assert y.requires_grad and not y.is_leaf
    assert y.grad_fn.name() == "SquareBackward" and isinstance(y.grad_fn, Square)
    ((node, nr),) = y.grad_fn.next_functions
    assert node.name() == "torch::autograd::AccumulateGrad" and node.variable is x and nr == 0
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]


def test_setup_context_style_binds_defaults():
    seen = {}

    class Scale(Function):
        @staticmethod
        def forward(x, k=2.0):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen["inputs"] = inputs
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.k, None

    x = leaf([1.0, 2.0])
    y = Scale.apply(x)
    assert y.tolist() == [2.0, 4.0] and seen["inputs"][1] == 2.0
    (g,) = autograd.grad(y.sum(), x)
    assert g.tolist() == [2.0, 2.0]
    y = Scale.apply(x, k=5.0)
    assert seen["inputs"][1] == 5.0
    assert autograd.grad(y.sum(), x)[0].tolist() == [5.0, 5.0]


def test_classic_style_keyword_arguments_and_ctx_attributes():
    class Affine(Function):
        @staticmethod
        def forward(ctx, x, a, b=0.0):
            ctx.a = a
            return x * a + b

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.a, None, None

    x = leaf([1.0])
    y = Affine.apply(x, 3.0, b=1.0)
    assert y.item() == 4.0
    y.backward()
    assert x.grad.item() == 3.0


def test_vjp_as_the_name_of_backward():
    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def vjp(ctx, grad):
            return grad * 2

    x = leaf([1.0])
    Double.apply(x).sum().backward()
    assert x.grad.item() == 2.0


def test_needs_input_grad_in_forward_and_backward():
    seen = []

    class Add(Function):
        @staticmethod
        def forward(ctx, x, y, k):
            seen.append(ctx.needs_input_grad)
            return x + y * k

        @staticmethod
        def backward(ctx, grad):
            seen.append(ctx.needs_input_grad)
            return grad, (grad * ctx.k if ctx.needs_input_grad[1] else None), None

    x = leaf([1.0])
    Add.apply(x, ember.ones(1, dtype=ember.float64), 3).sum().backward()
    assert seen == [(True, False, False), (True, False, False)]
    assert x.grad.item() == 1.0


def test_no_recording_without_grad():
    x = leaf([1.0])
    with ember.no_grad():
        y = Square.apply(x)
    assert y.grad_fn is None and not y.requires_grad and y.tolist() == [1.0]
    z = Square.apply(ember.tensor([3.0]))
    assert z.grad_fn is None and not z.requires_grad and z.tolist() == [9.0]


def test_forward_runs_without_recording():
    inside = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            inside.append(ember.is_grad_enabled())
            y = x * 2
            inside.append(y.grad_fn)
            return y

        @staticmethod
        def backward(ctx, grad):
            inside.append(ember.is_grad_enabled())
            return grad * 2

    x = leaf([1.0])
    Probe.apply(x).sum().backward()
    assert inside == [False, None, False]


# --- saved tensors --------------------------------------------------------------------------


def test_saved_tensor_version_check():
    x = leaf([1.0, 2.0])
    h = x * 1
    y = Square.apply(h)
    h.mul_(2)
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient "
                                           "computation has been modified by an inplace "
                                           "operation"):
        y.sum().backward()


def test_saved_tensors_are_freed_after_backward():
    x = leaf([2.0])
    y = Square.apply(x)
    node = y.grad_fn
    y.sum().backward(retain_graph=True)
    assert node.saved_tensors[0].tolist() == [2.0]
    y.sum().backward()
    assert x.grad.tolist() == [8.0]
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        node.saved_tensors


def test_saving_an_output():
    class Exp2(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * x
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y  # deliberately d/dx of nothing in particular

    x = leaf([3.0])
    Exp2.apply(x).sum().backward()
    assert x.grad.tolist() == [9.0]


def test_save_for_backward_only_takes_tensors():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(TypeError, match="save_for_backward can only save variables, but "
                                        "argument 1 is of type int"):
        Bad.apply(leaf([1.0]))


# --- outputs --------------------------------------------------------------------------------


def test_returning_an_input_unchanged():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 5

    x = leaf([1.0, 2.0])
    y = Identity.apply(x)
    assert y is not x and y.data_ptr() == x.data_ptr()
    assert y.grad_fn.name() == "IdentityBackward"
    y.sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]
    c = ember.ones(1)
    assert Identity.apply(c) is not c


def test_non_tensor_outputs_keep_their_slots():
    got = []

    class WithCount(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, 3, x * 3

        @staticmethod
        def backward(ctx, g_a, g_n, g_b):
            got.append(g_n)
            return g_a * 2 + g_b * 3

    x = leaf([1.0, 2.0])
    a, n, b = WithCount.apply(x)
    assert n == 3 and a.output_nr == 0 and b.output_nr == 2
    (a.sum() + b.sum()).backward()
    assert got == [None]
    assert x.grad.tolist() == [5.0, 5.0]


def test_multiple_outputs_and_materialized_zeros():
    got = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            got.append((ga.tolist(), gb.tolist()))
            return ga * 2 + gb * 3

    x = leaf([1.0, 2.0])
    a, b = Two.apply(x)
    a.sum().backward(retain_graph=True)
    assert got[-1] == ([1.0, 1.0], [0.0, 0.0])  # the unused output gets zeros
    x.grad = None
    (a * b).sum().backward()  # d/dx (2x * 3x) = 12x
    assert x.grad.tolist() == [12.0, 24.0]


def test_set_materialize_grads_false_gives_none():
    got = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            got.append(gb)
            grad = ember.zeros_like(ga) if ga is not None else None
            if ga is not None:
                grad = grad + ga * 2
            if gb is not None:
                grad = gb * 3 if grad is None else grad + gb * 3
            return grad

    x = leaf([1.0])
    a, b = Two.apply(x)
    a.sum().backward()
    assert got == [None] and x.grad.tolist() == [2.0]


def test_mark_non_differentiable():
    got = []

    class SortLike(Function):
        @staticmethod
        def forward(ctx, x):
            idx = (x > 1.5).to(ember.float64)
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            got.append(g_idx.tolist())
            return g * 2

    x = leaf([1.0, 2.0])
    y, idx = SortLike.apply(x)
    assert y.requires_grad and not idx.requires_grad and idx.grad_fn is None
    assert idx.tolist() == [0.0, 1.0]
    y.sum().backward()
    assert got == [[0.0, 0.0]] and x.grad.tolist() == [2.0, 2.0]


def test_integer_outputs_do_not_require_grad():
    class WithIndex(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, (x > 1.5).long()

        @staticmethod
        def backward(ctx, g, g_idx):
            return g * 2

    y, idx = WithIndex.apply(leaf([1.0, 2.0]))
    assert y.requires_grad and not idx.requires_grad and idx.dtype is ember.int64


# --- in-place custom functions --------------------------------------------------------------


class MulThreeInplace(Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(3)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 3


def test_mark_dirty_moves_the_input_onto_the_node():
    a = leaf([1.0, 2.0])
    c = a * 1
    v0 = c._version.value
    out = MulThreeInplace.apply(c)
    assert out is c
    assert c._version.value == v0 + 2  # the in-place write, then mark_dirty
    assert c.grad_fn.name() == "MulThreeInplaceBackward"
    assert c.tolist() == [3.0, 6.0]
    (c * ember.tensor([1.0, 10.0], dtype=ember.float64)).sum().backward()
    assert a.grad.tolist() == [3.0, 30.0]


def test_mark_dirty_with_a_saved_dirty_tensor():
    class AddOneInplace(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors  # the new value; no version error
            return grad * x

    a = leaf([1.0, 2.0])
    c = a * 1
    AddOneInplace.apply(c).sum().backward()
    assert a.grad.tolist() == [2.0, 3.0]


def test_mark_dirty_on_a_view():
    a = leaf([1.0, 1.0, 1.0, 1.0])
    c = a * 1
    v = c[:2]
    out = MulThreeInplace.apply(v)
    assert out is v
    assert c.tolist() == [3.0, 3.0, 1.0, 1.0]
    assert c.grad_fn.name() == "CopySlices"
    (c * ember.tensor([1.0, 2.0, 3.0, 4.0], dtype=ember.float64)).sum().backward()
    assert a.grad.tolist() == [3.0, 6.0, 3.0, 4.0]


def test_mark_dirty_errors():
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad has been used in "
                                           "an in-place operation.$"):
        MulThreeInplace.apply(leaf([1.0]))

    class Forgets(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(RuntimeError, match="Some elements marked as dirty during the forward "
                                           "method were not returned as output."):
        Forgets.apply(leaf([1.0]) * 1)


def test_mark_dirty_without_grad():
    c = ember.ones(2, dtype=ember.float64)
    out = MulThreeInplace.apply(c)
    assert out is c and c.tolist() == [3.0, 3.0] and c._version.value == 2


# --- double backward ------------------------------------------------------------------------


def test_double_backward_through_custom_function():
    x = leaf([2.0])
    y = Cube.apply(x)
    (g1,) = autograd.grad(y, x, create_graph=True)
    (g2,) = autograd.grad(g1, x, create_graph=True)
    (g3,) = autograd.grad(g2, x)
    assert (g1.item(), g2.item(), g3.item()) == (12.0, 12.0, 6.0)  # 3x^2, 6x, 6


def test_once_differentiable():
    class OnceSquare(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            assert not ember.is_grad_enabled()
            return 2 * x * grad

    x = leaf([1.0, 2.0])
    OnceSquare.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    v = ember.ones(2, dtype=ember.float64, requires_grad=True)
    (g,) = autograd.grad(OnceSquare.apply(x), x, v, create_graph=True)
    assert g.tolist() == [2.0, 4.0] and g.requires_grad
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was "
                                           "marked with @once_differentiable"):
        g.sum().backward()
    # With a constant incoming gradient there is nothing to differentiate further.
    (g,) = autograd.grad(OnceSquare.apply(x).sum(), x, create_graph=True)
    assert not g.requires_grad


# --- errors in backward ---------------------------------------------------------------------


def test_wrong_number_of_gradients():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=re.escape(
            "function BadBackward returned an incorrect number of gradients (expected 2, "
            "got 1)")):
        Bad.apply(x, x.detach()).sum().backward()

    class ExtraNones(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, None, None

    ExtraNones.apply(x).sum().backward()  # trailing Nones are ignored
    assert x.grad.tolist() == [2.0, 2.0]


def test_wrong_gradient_shape():
    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return ember.ones(2, dtype=ember.float64)

    with pytest.raises(RuntimeError, match=re.escape(
            "Function BadShapeBackward returned an invalid gradient at index 0 - got [2] but "
            "expected shape compatible with [3]")):
        BadShape.apply(leaf([1.0, 2.0, 3.0])).sum().backward()


def test_gradient_is_cast_to_the_input_dtype():
    class Float32Grad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return (grad * 2).to(ember.float32)

    x = leaf([1.0])
    Float32Grad.apply(x).sum().backward()
    assert x.grad.dtype is ember.float64 and x.grad.item() == 2.0


def test_instantiating_is_deprecated_and_legacy_call_fails():
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        fn = Square()
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward "
                                           "method is deprecated"):
        fn(leaf([1.0]))


def test_missing_forward_or_backward():
    class NoForward(Function):
        pass

    with pytest.raises(NotImplementedError, match="You must implement the forward function"):
        NoForward.apply(leaf([1.0]))

    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    with pytest.raises(NotImplementedError, match="You must implement either the backward or "
                                                  "vjp method"):
        NoBackward.apply(leaf([1.0])).sum().backward()


# --- gradcheck ------------------------------------------------------------------------------


class WrongSquare(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * x * grad  # should be 2x


class FirstOrderOnlySquare(Function):
    """Right first derivative, but its backward detaches x: the second derivative is lost."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x.detach() * grad


def _inputs():
    return (ember.tensor(np.array([0.3, -1.2, 2.0]), requires_grad=True),)


def test_gradcheck_passes_for_right_backward():
    assert gradcheck(Square.apply, _inputs())
    assert gradgradcheck(Square.apply, _inputs())
    assert gradgradcheck(Cube.apply, _inputs())
    assert gradcheck(Square.apply, _inputs(), fast_mode=True)
    a = ember.tensor(np.arange(6.0).reshape(2, 3) / 7, requires_grad=True)
    assert gradcheck(lambda x, y: x * y + y, (a, ember.tensor(np.ones(3) * 0.5,
                                                              requires_grad=True)))
    assert gradcheck(lambda t: t * t, (a.detach().transpose(0, 1).requires_grad_(),))


def test_gradcheck_catches_wrong_backward():
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to "
                                             "input 0,\nnumerical:"):
        gradcheck(WrongSquare.apply, _inputs())
    assert issubclass(GradcheckError, RuntimeError)
    assert gradcheck(WrongSquare.apply, _inputs(), raise_exception=False) is False
    # the index counts only the inputs that require grad
    with pytest.raises(GradcheckError, match="with respect to input 0"):
        gradcheck(lambda c, x: WrongSquare.apply(x) + c,
                  (ember.ones(3, dtype=ember.float64), *_inputs()))


def test_gradgradcheck_catches_wrong_double_backward():
    assert gradcheck(FirstOrderOnlySquare.apply, _inputs())
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(FirstOrderOnlySquare.apply, _inputs())
    assert gradgradcheck(FirstOrderOnlySquare.apply, _inputs(), raise_exception=False) is False


def test_gradcheck_backward_must_use_grad_output():
    class IgnoresGrad(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, grad):
            return ember.ones(3, dtype=ember.float64)  # right only when grad == 1

    with pytest.raises(GradcheckError, match="backward not multiplied by grad_output"):
        gradcheck(IgnoresGrad.apply, _inputs())


def test_gradcheck_nondeterministic_backward():
    rng = np.random.default_rng(0)

    class Noisy(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            noise = ember.tensor(rng.uniform(0, 1e-9, 3))
            return grad * (2 + noise)

    with pytest.raises(GradcheckError, match="Backward is not reentrant"):
        gradcheck(Noisy.apply, _inputs())
    assert gradcheck(Noisy.apply, _inputs(), nondet_tol=1e-7)


def test_gradcheck_outputs_without_grad():
    assert gradcheck(lambda x: (x > 0).long(), _inputs())
    assert gradcheck(lambda x: (x * 2, (x * 3).detach()), _inputs())
    with pytest.raises(GradcheckError, match="Numerical gradient for function expected to be "
                                             "zero"):
        gradcheck(lambda x: (x * 2).detach(), _inputs())


def test_gradcheck_argument_errors():
    with pytest.raises(ValueError, match="gradcheck expects at least one input tensor to require "
                                         "gradient"):
        gradcheck(lambda x: x * 2, (ember.ones(2, dtype=ember.float64),))
    with pytest.warns(UserWarning, match="is not a double precision floating point"):
        gradcheck(lambda x: x * 2, (ember.ones(2, requires_grad=True),), eps=1e-2)
    with pytest.raises(NotImplementedError, match="check_forward_ad"):
        gradcheck(Square.apply, _inputs(), check_forward_ad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gradcheck(Square.apply, _inputs()[0])  # a single tensor is accepted


# --- PyTorch parity -------------------------------------------------------------------------


def _make_functions(lib):
    class Gelu3(lib.autograd.Function):
        """A polynomial with two outputs, one non-tensor output in between."""

        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * x * w, "tag", x * w + w

        @staticmethod
        def backward(ctx, g1, g_tag, g2):
            x, w = ctx.saved_tensors
            gx = g1 * 2 * x * w + g2 * w
            gw = g1 * x * x + g2 * (x + 1)
            return gx, gw

    return Gelu3


@needs_torch
def test_custom_function_matches_torch():
    rng = np.random.default_rng(1)
    x_np, w_np = rng.normal(size=(4,)), rng.normal(size=(4,))
    results = []
    for lib in (ember, torch):
        fn = _make_functions(lib)
        x = lib.tensor(x_np, requires_grad=True)
        w = lib.tensor(w_np, requires_grad=True)
        a, tag, b = fn.apply(x, w)
        assert tag == "tag" and a.grad_fn.name() == "Gelu3Backward"
        assert (a.output_nr, b.output_nr) == (0, 2)
        gx, gw = lib.autograd.grad((a * b).sum(), [x, w], create_graph=True)
        (ggx,) = lib.autograd.grad((gx * gw).sum(), [x])
        results.append([t.detach().numpy().copy() for t in (a, b, gx, gw, ggx)])
    for mine, theirs in zip(*results):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)


# ---------------------------------------------------------------------------
# the node class: <Name>Backward, as in PyTorch, also for views of the input

def _node_names(lib):
    class ViewOfInput(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.kind = type(ctx).__name__
            return x.view(-1)

        @staticmethod
        def backward(ctx, grad):
            return grad.view(2, 2)

    class Rows(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x[0], x[1]

        @staticmethod
        def backward(ctx, g0, g1):
            return lib.stack([g0, g1])

    class Same(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    class Sub(Double):
        pass

    x = lib.ones(2, 2, requires_grad=True)
    names = []
    for fn in (ViewOfInput, Rows, Same, Double, Sub):
        out = fn.apply(x)
        node = (out[1] if isinstance(out, tuple) else out).grad_fn
        names.append((type(node).__name__, node.name(), node._forward_cls is fn))
    v = ViewOfInput.apply(x)
    v.sum().backward()
    names.append((v.grad_fn.kind, x.grad.tolist()))
    return names


def test_custom_function_nodes_are_named_like_pytorch():
    assert _node_names(ember) == [
        ("ViewOfInputBackward", "ViewOfInputBackward", True),
        ("RowsBackward", "RowsBackward", True),
        ("SameBackward", "SameBackward", True),
        ("DoubleBackward", "DoubleBackward", True),
        ("SubBackward", "SubBackward", True),
        ("ViewOfInputBackward", [[1.0, 1.0], [1.0, 1.0]]),
    ]


def test_custom_function_node_names_match_pytorch():
    torch = pytest.importorskip("torch")
    assert _node_names(ember) == _node_names(torch)
