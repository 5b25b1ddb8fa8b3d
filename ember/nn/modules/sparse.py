"""Lookup tables: Embedding (one row per index) and EmbeddingBag (sums, means or maxima of
bags of rows).  With ``sparse=True`` the weight's gradient is a sparse COO tensor holding
only the rows used (SGD, Adagrad and SparseAdam take such gradients)."""

from __future__ import annotations

from ..._core.grad_mode import no_grad
from ...ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module
from .utils import _changed_options

__all__ = ["Embedding", "EmbeddingBag"]


def _check_padding_idx(padding_idx, num_embeddings: int):
    """Negative padding_idx counts from the end (PyTorch's AssertionError when out of range)."""
    if padding_idx is None:
        return None
    if padding_idx > 0 and padding_idx >= num_embeddings:
        raise AssertionError("Padding_idx must be within num_embeddings")
    if padding_idx < 0:
        if padding_idx < -num_embeddings:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx += num_embeddings
    return padding_idx


def _initial_weight(_weight, num_embeddings: int, embedding_dim: int):
    """The given table (checked against the sizes), or None to draw one."""
    if _weight is None:
        return None
    if list(_weight.shape) != [num_embeddings, embedding_dim]:
        raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
    return _weight


class _EmbeddingBase(Module):
    """What Embedding and EmbeddingBag share: the options of the lookup, the table and how it
    starts, and the norm options of their reprs."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None,
                 max_norm: float | None, norm_type: float, scale_grad_by_freq: bool,
                 sparse: bool, _weight, requires_grad: bool, device, dtype) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _check_padding_idx(padding_idx, num_embeddings)
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        self._init_table(_weight, requires_grad, device, dtype)

    def _init_table(self, _weight, requires_grad: bool, device, dtype) -> None:
        """Make `weight` from the given table, or draw one (num_embeddings and embedding_dim
        set before)."""
        weight = _initial_weight(_weight, self.num_embeddings, self.embedding_dim)
        if weight is None:
            self.weight = Parameter(empty((self.num_embeddings, self.embedding_dim),
                                          device=device, dtype=dtype),
                                    requires_grad=requires_grad)
            self.reset_parameters()
        else:
            self.weight = Parameter(weight, requires_grad=requires_grad)

    def reset_parameters(self) -> None:
        """Draw new N(0, 1) rows; the padding row is zero."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def _norm_options_repr(self) -> str:
        """The max_norm, norm_type and scale_grad_by_freq parts of the repr (where not at
        their defaults)."""
        return _changed_options(
            self, {"max_norm": None, "norm_type": 2, "scale_grad_by_freq": False})


class Embedding(_EmbeddingBase):
    """A table of `num_embeddings` vectors of size `embedding_dim`, looked up by index.

    Input: an integer tensor of any shape; output: ``input.shape + (embedding_dim,)``.
    weight starts as N(0, 1) draws, with the `padding_idx` row (which gets no gradient)
    set to zeros.  See ``F.embedding`` for `max_norm`, `norm_type`, `scale_grad_by_freq`
    and `sparse`.

    >>> Embedding(10, 3)(ember.tensor([[1, 2], [4, 5]])).shape
    ember.Size([2, 2, 3])
    """

    __constants__ = ["num_embeddings", "embedding_dim", "padding_idx", "max_norm", "norm_type",
                     "scale_grad_by_freq", "sparse"]

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None,
                 _freeze: bool = False, device=None, dtype=None) -> None:
        super().__init__(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
                         scale_grad_by_freq, sparse, _weight, not _freeze, device, dtype)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        s += self._norm_options_repr()
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, sparse: bool = False) -> Embedding:
        """An Embedding whose weight is `embeddings` (2-D); frozen (no gradient) by default."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, _freeze=freeze,
                   padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


class EmbeddingBag(_EmbeddingBase):
    """Sums, means or maxima over bags of embedding rows, without making each row.

    ``forward(input, offsets=None, per_sample_weights=None)``: a 2-D input (B, N) is B
    bags of N indices; a 1-D input is cut into bags at `offsets`.  Output (B,
    embedding_dim).  See ``F.embedding_bag`` for the options.

    >>> bag = EmbeddingBag(10, 3, mode="sum")
    >>> bag(ember.tensor([1, 2, 4, 5, 4]), ember.tensor([0, 2])).shape
    ember.Size([2, 3])
    """

    __constants__ = ["num_embeddings", "embedding_dim", "max_norm", "norm_type",
                     "scale_grad_by_freq", "mode", "sparse", "include_last_offset",
                     "padding_idx"]

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight=None, include_last_offset: bool = False,
                 padding_idx: int | None = None, device=None, dtype=None) -> None:
        super().__init__(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
                         scale_grad_by_freq, sparse, _weight, True, device, dtype)
        self.mode = mode
        self.include_last_offset = include_last_offset

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}" + self._norm_options_repr()
        s += f", mode='{self.mode}'"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        mode: str = "mean", sparse: bool = False,
                        include_last_offset: bool = False,
                        padding_idx: int | None = None) -> EmbeddingBag:
        """An EmbeddingBag whose weight is `embeddings` (2-D); frozen by default."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, max_norm=max_norm,
                  norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq, mode=mode,
                  sparse=sparse, include_last_offset=include_last_offset,
                  padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag
