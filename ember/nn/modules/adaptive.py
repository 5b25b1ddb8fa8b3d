"""AdaptiveLogSoftmaxWithLoss: the softmax of Grave et al. (2017) for large vocabularies.

Classes are split by `cutoffs` into a frequent *shortlist* and rarer *clusters*.  The head,
one Linear, scores the shortlist classes and one entry per cluster; each cluster has a
small two-layer tail (its hidden size shrinks by `div_value` per cluster) that scores the
classes inside it.  log p(class) is the head's log-probability for a shortlist class, and
the head's log-probability of the cluster plus the tail's log-probability of the class
inside it for the others.  Each tail only runs on the rows whose target falls in it.
"""

from __future__ import annotations

from collections import namedtuple

from ..._core.tensor import Tensor
from ...ops.joining import cat
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax: ``forward(input, target)`` returns ``(output, loss)``, the
    log-probability of each target and their negated mean; `log_prob` and `predict`
    give the full distribution and its argmax."""

    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0,
                 head_bias: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **kw),
                                        Linear(hidden, size, bias=False, **kw)))

    def reset_parameters(self) -> None:
        """Re-initialize the head and every tail layer."""
        self.head.reset_parameters()
        for projection, classifier in self.tail:
            projection.reset_parameters()
            classifier.reset_parameters()

    def forward(self, input: Tensor, target: Tensor):
        unbatched = input.dim() == 1
        if unbatched:
            if target.dim() != 0:
                raise RuntimeError("1D input requires a 0D target, but got a target of "
                                   f"{target.dim()} dims")
            input, target = input.unsqueeze(0), target.unsqueeze(0)
        elif input.dim() != 2 or target.dim() != 1:
            raise RuntimeError(f"AdaptiveLogSoftmaxWithLoss: expected a 2D input and 1D target "
                               f"(or 1D and 0D), but got {input.dim()}D and {target.dim()}D")
        if input.shape[0] != target.shape[0]:
            raise RuntimeError("Input and target should have the same size in the batch "
                               "dimension.")
        if target.numel() and (int(target.min()) < 0 or int(target.max()) >= self.n_classes):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{int(target.min())}, {int(target.max())}] "
                               "were found. ")
        # which part each target is in: 0 = the shortlist, k = cluster k
        part = sum((target >= c).long() for c in self.cutoffs[:-1])
        head_column = target.where(part == 0, self.shortlist_size + part - 1)
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = head_logprob.gather(1, head_column.unsqueeze(1)).squeeze(1)
        for k, tail in enumerate(self.tail, start=1):
            rows = (part == k).nonzero().flatten()
            if rows.numel() == 0:
                continue
            inside = target.index_select(0, rows) - self.cutoffs[k - 1]
            tail_logprob = F.log_softmax(tail(input.index_select(0, rows)), dim=1)
            output = output.index_add(0, rows,
                                      tail_logprob.gather(1, inside.unsqueeze(1)).squeeze(1))
        loss = (-output).mean()
        return _ASMoutput(output.squeeze(0) if unbatched else output, loss)

    def log_prob(self, input: Tensor) -> Tensor:
        """log p(class | input) for every class: shape (N, n_classes) (or (n_classes,))."""
        unbatched = input.dim() == 1
        x = input.unsqueeze(0) if unbatched else input
        head_logprob = F.log_softmax(self.head(x), dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for k, tail in enumerate(self.tail):
            cluster = head_logprob[:, self.shortlist_size + k:self.shortlist_size + k + 1]
            parts.append(F.log_softmax(tail(x), dim=1) + cluster)
        out = cat(parts, 1)
        return out.squeeze(0) if unbatched else out

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row (a 0-d tensor for an unbatched input)."""
        return self.log_prob(input).argmax(-1)

