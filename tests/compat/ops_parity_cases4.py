"""The op parity sweep's tables, part 4: creation, conversion, Tensor attributes, the
nn-level functions of the top-level namespace, dtype helpers; the bad calls
(`ERROR_CASES`) and the names left out of the sweep (`NOT_SWEPT`)."""

from __future__ import annotations

from .ops_parity_spec import ALL, FI, FLOAT, NONE, Case, D, T, s

_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
           "float32", "float64", "complex64"]

CREATION_CASES = [
    Case("zeros_like", [s(T(2, 3)), s(T(2, 3), dtype=D("int64")), s(T())], ALL),
    Case("ones_like", [s(T(2, 3)), s(T(2, 3), dtype=D("bool"))], ALL),
    Case("full_like", [s(T(2, 3), 7), s(T(2, 3), 2.5), s(T(2, 3), 1, dtype=D("float64"))], ALL),
    Case("empty_like", [s(T(2, 3)), s(T(2, 3), dtype=D("int32"))], ALL,
         op=lambda lib, x, **kw: _meta(lib.empty_like(x, **kw))),
    Case("arange", [s(5), s(1, 4), s(0, 1, 0.25), s(5.0), s(1, 7, 2), s(3, dtype=D("float32")),
                    s(0, -3, -1), s(0.1, 0.35, 0.1)], NONE),
    Case("linspace", [s(0, 1, 5), s(-1, 1, 1), s(2, 3, 0), s(0, 10, 4, dtype=D("int64"))], NONE),
    Case("logspace", [s(0, 2, 3), s(0, 3, 4, base=2)], NONE),
    Case("eye", [s(3), s(2, 3), s(3, dtype=D("int64")), s(0)], NONE),
    Case("zeros", [s(2, 3), s((2, 3)), s([]), s(2, dtype=D("int64"))], NONE),
    Case("ones", [s(2, 3), s((0,))], NONE),
    Case("full", [s((2, 3), 1.5), s((2,), 7), s((2,), True), s((2,), 1, dtype=D("float64"))],
         NONE),
    Case("empty", [s(2, 3), s((2, 3), dtype=D("int64"))], NONE,
         op=lambda lib, *a, **kw: _meta(lib.empty(*a, **kw))),
    Case("empty_strided", [s((2, 3), (3, 1))], NONE,
         op=lambda lib, *a, **kw: _meta(lib.empty_strided(*a, **kw))),
    Case("tensor", [s(1), s(1.5), s(True), s([1, 2]), s([1.0, 2]), s([[1, 2], [3, 4]]),
                    s([True, False]), s([]), s([1, 2], dtype=D("float64")), s([[]])], NONE),
    Case("as_tensor", [s([1, 2]), s(T(2, 3)), s(T(2, 3), dtype=D("float64"))], FLOAT,
         grad=False),
    Case("tril_indices", [s(3, 3), s(3, 4, 1), s(4, 3, -1)], NONE),
    Case("triu_indices", [s(3, 3), s(3, 4, 1), s(4, 3, -1)], NONE),
    Case("meshgrid", [s(T(2), T(3), indexing="ij"), s(T(2), T(3), indexing="xy"),
                      s([T(2), T(3)], indexing="ij")], FLOAT),
    Case("range", [s(0, 3), s(0, 1, 0.5)], NONE),
    Case("new_zeros", [s(T(2), (2, 3)), s(T(2), 3)], ALL),
    Case("new_ones", [s(T(2), (2, 3)), s(T(2), (2,), dtype=D("float64"))], ALL),
    Case("new_full", [s(T(2), (2, 3), 7), s(T(2), (2,), 2.5)], ALL),
    Case("new_empty", [s(T(2), (2, 3))], ALL, op=lambda lib, x, *a: _meta(x.new_empty(*a))),
    Case("new_tensor", [s(T(2), [1, 2]), s(T(2), [1.5]), s(T(2), T(3))], ALL, grad=False),
    Case("fill_", [s(T(2, 3), 7), s(T(2, 3), 2.5), s(T(2, 3), T(dtype="float64"))], ALL),
    Case("zero_", [s(T(2, 3))], ALL),
    Case("full", [s((2,), -1, dtype=D("uint8")), s((2,), -256, dtype=D("uint8")),
                  s((2,), 2.5, dtype=D("int64"))], NONE, tag="int"),
    Case("fill_", [s(T(2, dtype="uint8", low=0, high=9), -1),
                   s(T(2, dtype="int8", low=0, high=9), 300)], NONE, tag="int"),
]


def _meta(t):
    """Shape, dtype and requires_grad of a tensor whose values are undefined."""
    return (tuple(t.shape), str(t.dtype).rsplit(".", 1)[-1], t.requires_grad)


CONVERSION_CASES = [
    Case("to", [s(T(2, 3), D("float64")), s(T(2, 3), D("int64")), s(T(2, 3), D("bool")),
                s(T(2, 3), T(2, dtype="float32")), s(T(2, 3), "cpu"),
                s(T(2, 3), dtype=D("float32")), s(T(2, 3), "cpu", D("float64")),
                s(T(2, 3), D("float32"), copy=True)], ALL),
    Case("float", [s(T(2, 3))], ALL),
    Case("double", [s(T(2, 3))], ALL),
    Case("half", [s(T(2, 3))], ALL),
    Case("bfloat16", [s(T(2, 3))], ALL),
    Case("long", [s(T(2, 3))], ALL),
    Case("int", [s(T(2, 3))], ALL),
    Case("short", [s(T(2, 3))], ALL),
    Case("char", [s(T(2, 3))], ALL),
    Case("byte", [s(T(2, 3, low=0, high=5))], ALL),
    Case("bool", [s(T(2, 3))], ALL),
    Case("cfloat", [s(T(2, 3))], FLOAT),
    Case("type", [s(T(2, 3), D("float64")), s(T(2, 3), D("int64"))], FLOAT,
         variants=("method",)),
    Case("clone", [s(T(2, 3)), s(T(2, 3, transposed=True)), s(T())], ALL),
    Case("contiguous", [s(T(2, 3)), s(T(2, 3, transposed=True))], FLOAT),
    Case("copy_", [s(T(2, 3), T(3)), s(T(2, 3), T(2, 3, dtype="int64")), s(T(2, 3), T())], FI),
    Case("detach", [s(T(2, 3))], FLOAT),
    Case("requires_grad_", [s(T(2, 3, grad=False)), s(T(2, 3, grad=False), False)], FLOAT,
         op=lambda lib, x, *a: x.detach().requires_grad_(*a).requires_grad),
    Case("item", [s(T()), s(T(1)), s(T(1, 1))], ALL),
    Case("tolist", [s(T(2, 3)), s(T()), s(T(0, 2))], ALL),
    Case("numpy", [s(T(2, 3))], ALL, op=lambda lib, x: x.detach().numpy()),
    Case("dim", [s(T(2, 3)), s(T())], FLOAT),
    Case("numel", [s(T(2, 3)), s(T()), s(T(0, 3))], FLOAT),
    Case("nelement", [s(T(2, 3))], FLOAT),
    Case("ndimension", [s(T(2, 3))], FLOAT),
    Case("size", [s(T(2, 3)), s(T(2, 3), 1), s(T(2, 3), -1), s(T())], FLOAT),
    Case("stride", [s(T(2, 3)), s(T(2, 3), 0), s(T(2, 3, transposed=True))], FLOAT),
    Case("element_size", [s(T(2))], ALL),
    Case("is_contiguous", [s(T(2, 3)), s(T(2, 3, transposed=True))], FLOAT),
    Case("is_floating_point", [s(T(2))], ALL),
    Case("is_complex", [s(T(2))], ALL),
    Case("storage_offset", [s(T(4, 3))], FLOAT,
         op=lambda lib, x: (x.storage_offset(), x[1:].storage_offset(), x[:, 2].storage_offset())),
    Case("get_device", [s(T(2))], FLOAT),
    Case("is_inference", [s(T(2))], FLOAT),
    Case("sum_to_size", [s(T(2, 3), 1, 3), s(T(2, 3), (2, 1)), s(T(2, 3), ())], FLOAT),
    Case("is_tensor", [s(T(2)), s(3), s([1])], FLOAT, variants=("fn",)),
    Case("is_floating_point", [s(T(2))], ALL, variants=("fn",), tag="fn"),
    Case("result_type", [s(T(2), T(2, dtype="int64")), s(T(2), 2.5), s(T(2, dtype="int64"), 2.5),
                         s(T(2, dtype="int64"), T(dtype="float64")), s(3, T(2))], ALL),
    Case("promote_types", [s(D(a), D(b)) for a in _DTYPES for b in _DTYPES[::2]], NONE),
    Case("can_cast", [s(D(a), D(b)) for a in _DTYPES[::2] for b in _DTYPES], NONE),
    Case("broadcast_shapes", [s((2, 1), (3,)), s((), (2,)), s((0, 1), (1, 3))], NONE),
]

NN_CASES = [
    Case("mse_loss", [s(T(4), T(4), weight=T(4, low=0, high=2)),
                      s(T(2, 3), T(2, 3), weight=T(3, low=0, high=2))]
         + [s(T(2, 3), T(2, 3), weight=T(2, 3, low=0, high=2), reduction=r)
            for r in ("mean", "sum", "none")], FLOAT,
         op=lambda lib, *a, **kw: lib.nn.functional.mse_loss(*a, **kw)),
    Case("one_hot", [s(T(values=[0, 2, 1], dtype="int64")),
                     s(T(values=[[0], [3]], dtype="int64"), 5),
                     s(T(values=[], dtype="int64"), 3)], NONE,
         op=lambda lib, *a: lib.nn.functional.one_hot(*a)),
    Case("softmax", [s(T(2, 3), 1), s(T(2, 3), 0), s(T(), 0), s(T(2, 3), -1, dtype=D("float64")),
                     s(T(0, 3), 1)], FLOAT),
    Case("log_softmax", [s(T(2, 3), 1), s(T(2, 3), 0), s(T(), 0)], FLOAT),
    Case("relu_", [s(T(2, 3))], FLOAT),
    Case("celu", [s(T(2, 3)), s(T(2, 3), 0.5)], FLOAT),
    Case("celu_", [s(T(2, 3))], FLOAT),
    Case("selu", [s(T(2, 3))], FLOAT),
    Case("selu_", [s(T(2, 3))], FLOAT),
    Case("hardshrink", [s(T(2, 3)), s(T(2, 3), 1.0)], FLOAT),
    Case("prelu", [s(T(2, 3), T(1)), s(T(2, 3, 4), T(3))], FLOAT),
    Case("threshold", [s(T(2, 3), 0.5, -1.0)], FLOAT),
    Case("threshold_", [s(T(2, 3), 0.5, -1.0)], FLOAT),
    Case("rrelu", [s(T(2, 3)), s(T(2, 3), 0.1, 0.3, False)], FLOAT),
    Case("rrelu_", [s(T(2, 3))], FLOAT),
    Case("dropout", [s(T(2, 3), 0.5, False), s(T(2, 3), 0.0, True)], FLOAT),
    Case("dropout_", [s(T(2, 3), 0.5, False)], FLOAT),
    Case("alpha_dropout", [s(T(2, 3), 0.5, False)], FLOAT),
    Case("feature_dropout", [s(T(2, 3, 4), 0.5, False)], FLOAT),
    Case("feature_alpha_dropout", [s(T(2, 3, 4), 0.5, False)], FLOAT),
    Case("batch_norm", [s(T(4, 3), T(3), T(3), T(3, grad=False), T(3, low=0.5, high=2, grad=False),
                          True, 0.1, 1e-5, False),
                        s(T(4, 3, 2), T(3), T(3), T(3, grad=False),
                          T(3, grad=False, low=0.5, high=2), False, 0.1, 1e-5, False)], FLOAT),
    Case("layer_norm", [s(T(2, 3), (3,), T(3), T(3), 1e-5, False), s(T(2, 3, 4), [3, 4])],
         FLOAT),
    Case("group_norm", [s(T(2, 4, 3), 2, T(4), T(4), 1e-5, False), s(T(2, 4, 3), 4)], FLOAT),
    Case("instance_norm", [s(T(2, 3, 4), T(3), T(3), None, None, True, 0.1, 1e-5, False)],
         FLOAT),
    Case("rnn_tanh_cell", [s(T(2, 3), T(2, 4), T(4, 3), T(4, 4), T(4), T(4))], FLOAT),
    Case("rnn_relu_cell", [s(T(2, 3), T(2, 4), T(4, 3), T(4, 4), T(4), T(4))], FLOAT),
    Case("gru_cell", [s(T(2, 3), T(2, 4), T(12, 3), T(12, 4), T(12), T(12))], FLOAT),
    Case("lstm_cell", [s(T(2, 3), (T(2, 4), T(2, 4)), T(16, 3), T(16, 4), T(16), T(16))],
         FLOAT),
]


def _inplace_on_leaf(lib):
    x = lib.ones(3, requires_grad=True)
    x.add_(1)


def _view_of_leaf_inplace(lib):
    x = lib.ones(3, 2, requires_grad=True)
    x[0].mul_(2)


def _backward_twice(lib):
    x = lib.ones(3, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


def _modified_saved(lib):
    x = lib.ones(3, requires_grad=True)
    y = x * 2
    z = y * y
    y.add_(1)
    z.sum().backward()


# (name, call(lib)): bad calls that must raise the exception type PyTorch raises
ERROR_CASES = [
    ("add-shape", lambda lib: lib.ones(2, 3) + lib.ones(4)),
    ("mul-shape", lambda lib: lib.mul(lib.ones(2, 3), lib.ones(3, 2))),
    ("matmul-shape", lambda lib: lib.ones(2, 3) @ lib.ones(2, 3)),
    ("mm-1d", lambda lib: lib.mm(lib.ones(3), lib.ones(3))),
    ("bmm-2d", lambda lib: lib.bmm(lib.ones(2, 3), lib.ones(3, 2))),
    ("dot-shape", lambda lib: lib.dot(lib.ones(3), lib.ones(4))),
    ("dot-dtype", lambda lib: lib.dot(lib.ones(3), lib.ones(3, dtype=lib.float64))),
    ("cat-shape", lambda lib: lib.cat([lib.ones(2, 3), lib.ones(2, 4)])),
    ("cat-empty-list", lambda lib: lib.cat([])),
    ("stack-shape", lambda lib: lib.stack([lib.ones(2), lib.ones(3)])),
    ("sum-dim", lambda lib: lib.ones(2, 3).sum(2)),
    ("sum-dim-neg", lambda lib: lib.ones(2, 3).sum(-3)),
    ("mean-int", lambda lib: lib.ones(2, dtype=lib.int64).mean()),
    ("softmax-dim", lambda lib: lib.softmax(lib.ones(2, 3), 3)),
    ("transpose-dim", lambda lib: lib.ones(2, 3).transpose(0, 2)),
    ("unsqueeze-dim", lambda lib: lib.ones(2, 3).unsqueeze(4)),
    ("squeeze-dim", lambda lib: lib.ones(2, 3).squeeze(5)),
    ("select-index", lambda lib: lib.ones(2, 3).select(0, 5)),
    ("getitem-index", lambda lib: lib.ones(2, 3)[5]),
    ("getitem-too-many", lambda lib: lib.ones(2, 3)[0, 0, 0]),
    ("getitem-float", lambda lib: lib.ones(2, 3)[1.5]),
    ("index_select-range", lambda lib: lib.ones(2, 3).index_select(0, lib.tensor([5]))),
    ("gather-dtype", lambda lib: lib.ones(2, 3).gather(1, lib.zeros(2, 1))),
    ("gather-range", lambda lib: lib.ones(2, 3).gather(1, lib.tensor([[3], [0]]))),
    ("view-size", lambda lib: lib.ones(2, 3).view(4)),
    ("view-noncontiguous", lambda lib: lib.ones(2, 3).t().view(6)),
    ("reshape-size", lambda lib: lib.ones(2, 3).reshape(4, -1)),
    ("reshape-two-minus-one", lambda lib: lib.ones(2, 3).reshape(-1, -1)),
    ("expand-size", lambda lib: lib.ones(2, 3).expand(4, 3)),
    ("permute-dims", lambda lib: lib.ones(2, 3).permute(0)),
    ("permute-repeat", lambda lib: lib.ones(2, 3).permute(0, 0)),
    ("bitwise_and-float", lambda lib: lib.ones(2) & lib.ones(2)),
    ("bitwise_xor-float", lambda lib: lib.bitwise_xor(lib.ones(2), lib.ones(2))),
    ("bitwise_not-float", lambda lib: lib.bitwise_not(lib.ones(2))),
    ("invert-float", lambda lib: ~lib.ones(2)),
    ("shift-float", lambda lib: lib.ones(2) << 1),
    ("neg-bool", lambda lib: -lib.ones(2, dtype=lib.bool)),
    ("sub-bool", lambda lib: lib.ones(2, dtype=lib.bool) - lib.ones(2, dtype=lib.bool)),
    ("add_-int-float", lambda lib: lib.ones(2, dtype=lib.int64).add_(1.5)),
    ("mul_-int-float", lambda lib: lib.ones(2, dtype=lib.int64).mul_(lib.ones(2))),
    ("div_-int", lambda lib: lib.ones(2, dtype=lib.int64).div_(2)),
    ("exp_-int", lambda lib: lib.ones(2, dtype=lib.int64).exp_()),
    ("add_-bool-int", lambda lib: lib.ones(2, dtype=lib.bool).add_(2)),
    ("add_-broadcast", lambda lib: lib.ones(3).add_(lib.ones(2, 3))),
    ("inplace-leaf", _inplace_on_leaf),
    ("inplace-view-of-leaf", _view_of_leaf_inplace),
    ("backward-twice", _backward_twice),
    ("saved-modified", _modified_saved),
    ("backward-nonscalar", lambda lib: (lib.ones(2, requires_grad=True) * 2).backward()),
    ("backward-no-grad", lambda lib: lib.ones(2).sum().backward()),
    ("grad-int", lambda lib: lib.ones(2, dtype=lib.int64).requires_grad_()),
    ("item-many", lambda lib: lib.ones(2).item()),
    ("int-pow-neg", lambda lib: lib.tensor([2]) ** -1),
    ("floor_divide-zero", lambda lib: lib.tensor([2]) // 0),
    ("remainder-zero", lambda lib: lib.tensor([2]) % 0),
    ("abs-bool", lambda lib: lib.abs(lib.ones(2, dtype=lib.bool))),
    ("max-empty", lambda lib: lib.ones(0).max()),
    ("argmax-empty", lambda lib: lib.ones(0).argmax()),
    ("max-dim-empty", lambda lib: lib.ones(0, 3).max(0)),
    ("amax-empty", lambda lib: lib.ones(0, 3).amax(0)),
    ("kthvalue-k", lambda lib: lib.ones(3).kthvalue(4)),
    ("topk-k", lambda lib: lib.ones(3).topk(4)),
    ("std-int", lambda lib: lib.ones(3, dtype=lib.int64).std()),
    ("norm-int", lambda lib: lib.ones(3, dtype=lib.int64).norm()),
    ("cumsum-dim", lambda lib: lib.ones(3).cumsum(1)),
    ("split-size", lambda lib: lib.ones(3).split([1, 1])),
    ("chunk-zero", lambda lib: lib.ones(3).chunk(0)),
    ("narrow-range", lambda lib: lib.ones(3).narrow(0, 2, 2)),
    ("repeat-dims", lambda lib: lib.ones(2, 3).repeat(2)),
    ("flip-dup", lambda lib: lib.ones(2, 3).flip(0, 0)),
    ("det-nonsquare", lambda lib: lib.det(lib.ones(2, 3))),
    ("inverse-singular", lambda lib: lib.inverse(lib.zeros(2, 2))),
    ("cholesky-notpd", lambda lib: lib.cholesky(-lib.eye(2))),
    ("where-cond-dtype", lambda lib: lib.where(lib.ones(2), lib.ones(2), lib.ones(2))),
    ("masked_fill-mask-dtype", lambda lib: lib.ones(2).masked_fill(lib.ones(2), 0.0)),
    ("masked_fill-value-dim", lambda lib: lib.ones(2).masked_fill(lib.ones(2) > 0, lib.ones(2))),
    ("scatter-dtype",
     lambda lib: lib.ones(3).scatter(0, lib.tensor([0]), lib.ones(1, dtype=lib.float64))),
    ("index_add-shape", lambda lib: lib.ones(3, 2).index_add(0, lib.tensor([0]), lib.ones(1, 3))),
    ("clamp-none", lambda lib: lib.clamp(lib.ones(2))),
    ("eq-type", lambda lib: lib.eq(lib.ones(2), "a")),
    ("add-type", lambda lib: lib.add(lib.ones(2), "a")),
    ("add-list", lambda lib: lib.add(lib.ones(2), [1, 2])),
    ("tensor-ragged", lambda lib: lib.tensor([[1, 2], [3]])),
    ("tensor-str", lambda lib: lib.tensor("a")),
    ("zeros-negative", lambda lib: lib.zeros(-1)),
    ("arange-step-zero", lambda lib: lib.arange(0, 3, 0)),
    ("arange-wrong-sign", lambda lib: lib.arange(0, 3, -1)),
    ("linspace-negative", lambda lib: lib.linspace(0, 1, -1)),
    ("eye-negative", lambda lib: lib.eye(-1)),
    ("fill_-overflow", lambda lib: lib.ones(2, dtype=lib.int8).fill_(300)),
    ("to-bad", lambda lib: lib.ones(2).to("abc")),
    ("one_hot-float", lambda lib: lib.nn.functional.one_hot(lib.ones(2))),
    ("one_hot-negative", lambda lib: lib.nn.functional.one_hot(lib.tensor([-1]))),
    ("one_hot-classes", lambda lib: lib.nn.functional.one_hot(lib.tensor([3]), 2)),
    ("layer_norm-shape", lambda lib: lib.layer_norm(lib.ones(2, 3), (4,))),
    ("einsum-operands", lambda lib: lib.einsum("ij,jk->ik", lib.ones(2, 3))),
    ("einsum-shape", lambda lib: lib.einsum("ij,jk->ik", lib.ones(2, 3), lib.ones(2, 3))),
    ("view-dtype-0dim", lambda lib: lib.tensor(1.0).view(lib.float16)),
    ("view-dtype-size", lambda lib: lib.ones(2, 3).view(lib.float64)),
    ("view-dtype-stride", lambda lib: lib.ones(4, 2).t().view(lib.float64)),
    ("transpose-0dim-range", lambda lib: lib.tensor(1.0).transpose(0, 1)),
    ("maximum-number", lambda lib: lib.maximum(lib.ones(2), 1)),
    ("atan2-number", lambda lib: lib.atan2(lib.ones(2), 1.0)),
    ("hypot_-number", lambda lib: lib.ones(2).hypot_(2.0)),
    ("uint8-add-too-big", lambda lib: lib.ones(2, dtype=lib.uint8) + 2 ** 64),
    ("int64-eq-too-big", lambda lib: lib.ones(2, dtype=lib.int64) == -(2 ** 64)),
    ("div-rounding-mode", lambda lib: lib.div(lib.ones(2), 2, rounding_mode="round")),
    ("div-floor-int-zero", lambda lib: lib.div(lib.tensor([1]), 0, rounding_mode="floor")),
    ("norm-p-string", lambda lib: lib.ones(2, 3).norm("abc")),
    ("vector_norm-inf-empty", lambda lib: lib.linalg.vector_norm(lib.ones(0, 3), float("inf"))),
    ("vector_norm-neg-empty-dim", lambda lib: lib.linalg.vector_norm(lib.ones(0, 3), -1, 0)),
    ("neg_-bool", lambda lib: lib.ones(2, dtype=lib.bool).neg_()),
    ("aminmax-empty-dim", lambda lib: lib.ones(0, 3).aminmax(dim=0)),
    ("var_mean-int", lambda lib: lib.var_mean(lib.ones(3, dtype=lib.int64))),
    ("all-dim-range", lambda lib: lib.ones(2, 3).all(2)),
]

# names both libraries have that the sweep leaves out, with the reason
_RANDOM = "random numbers: values differ by design (the generators are not PyTorch's)"
_STATE = "global state or settings, not a tensor op"
_AUTOGRAD = "autograd API, tested in tests/autograd"
NOT_SWEPT = {
    **{n: _RANDOM for n in [
        "bernoulli", "bernoulli_", "multinomial", "normal", "normal_", "poisson", "rand",
        "rand_like", "randint", "randint_like", "randn", "randn_like", "randperm", "uniform_",
        "random_", "exponential_", "geometric_", "cauchy_", "log_normal_"]},
    **{n: _STATE for n in [
        "get_default_dtype", "set_default_dtype", "get_rng_state", "set_rng_state", "seed",
        "manual_seed", "initial_seed", "is_grad_enabled", "is_inference_mode_enabled",
        "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_printoptions",
        "get_num_threads", "set_num_threads", "get_num_interop_threads",
        "set_num_interop_threads", "use_deterministic_algorithms",
        "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
        "set_float32_matmul_precision", "get_float32_matmul_precision",
        "is_autocast_enabled", "set_default_device", "get_default_device"]},
    "imag": "complex inputs only: tests/autograd/test_complex_gradients.py",
    "view_as_real": "complex inputs only: tests/autograd/test_complex_gradients.py",
    "compile": "wraps a model, not a tensor op: tests/test_compile.py",
    "asarray": "conversion of Python and NumPy objects: tests/ops/test_creation_extras.py",
    "polygamma_": "in-place polygamma: the out-of-place one is swept (polygamma)",
    "share_memory_": "moves memory between processes: tests/test_shared_memory.py",
    "is_shared": "a memory property: tests/test_shared_memory.py",
    "mvlgamma_": "in-place mvlgamma: the out-of-place one is swept (mvlgamma)",
    **{n: _AUTOGRAD for n in [
        "backward", "register_hook", "register_post_accumulate_grad_hook", "retain_grad",
        "detach_"]},
    "save": "serialization, tested in tests/serialization",
    "load": "serialization, tested in tests/serialization",
    "from_numpy": "used by the sweep itself to build every input",
    **{n: "quantized tensors: compared with PyTorch bit for bit in tests/ao" for n in [
        "quantize_per_tensor", "quantize_per_channel", "dequantize",
        "fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine"]},
    "from_dlpack": "interop, tested in tests/test_interop.py",
    **{n: "sparse tensors, tested against PyTorch in tests/test_sparse.py" for n in [
        "sparse_coo_tensor", "spmm", "to_sparse", "to_sparse_coo"]},
    "to_dense": "the identity on a dense tensor; sparse tensors, tested in tests/test_sparse.py",
    "cpu": "device transfer: the identity on CPU (tests/_core)",
    "cuda": "device transfer: needs a GPU",
    "data_ptr": "a memory address: differs by design",
    "untyped_storage": "storage objects are not compared (memory sharing is, by the sweep)",
}
