"""The autograd graph as a Graphviz picture: ``make_dot(output, params=...)``.

Each backward node (``grad_fn``) is a gray box named by ``name()``; each leaf tensor
that receives a gradient is a light-blue box with its parameter name and shape,
feeding its ``AccumulateGrad`` node; outputs are green.  Edges follow the data:
from inputs towards the output.  With ``show_saved=True`` the tensors a node saved
for backward hang off it in orange (shape, dtype); ``show_attrs=True`` also lists
its other attributes.

Needs the ``graphviz`` Python package (``pip install 'ember[viz]'``); building the
graph and its ``.source`` work without Graphviz's ``dot`` program, which only
``render()`` (PNG, SVG, PDF) needs: ``apt-get install graphviz`` (Debian/Ubuntu) or
``brew install graphviz``.
"""

from __future__ import annotations

import shutil

from ._core.accumulate import AccumulateGrad
from ._core.tensor import Tensor

__all__ = ["dot_available", "make_dot"]

_DOT_MISSING = ("rendering the graph needs Graphviz's `dot` program, which was not found on "
                "PATH: install it (apt-get install graphviz, brew install graphviz, or "
                "https://graphviz.org/download/). The graph's DOT text is in `.source`.")

_digraph_class = None


def _graphviz():
    try:
        import graphviz
    except ImportError:
        raise ImportError("ember.viz needs the `graphviz` Python package: "
                          "pip install 'ember[viz]' (or pip install graphviz)") from None
    return graphviz


def dot_available() -> bool:
    """True when Graphviz's `dot` program is installed (needed by ``render()``)."""
    return shutil.which("dot") is not None


def _digraph():
    """graphviz.Digraph whose render/pipe explain a missing `dot` program."""
    global _digraph_class
    if _digraph_class is None:
        graphviz = _graphviz()

        class Digraph(graphviz.Digraph):
            def render(self, *args, **kwargs):
                try:
                    return super().render(*args, **kwargs)
                except graphviz.ExecutableNotFound:
                    raise RuntimeError(_DOT_MISSING) from None

            def pipe(self, *args, **kwargs):
                try:
                    return super().pipe(*args, **kwargs)
                except graphviz.ExecutableNotFound:
                    raise RuntimeError(_DOT_MISSING) from None

        _digraph_class = Digraph
    return _digraph_class


def _shape(t) -> str:
    return "(" + ", ".join(str(d) for d in t.shape) + ")"


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."


def _saved(node) -> list:
    """(shape, dtype) of each tensor a node saved for backward (without unpacking hooks)."""
    out = []
    for e in getattr(node, "_saved", None) or ():
        if e is None or e[1] is None:
            continue
        if len(e) == 6:  # packed by saved-tensor hooks
            shape, dtype = e[5]
        else:
            shape, dtype = e[1].shape, e[1].dtype
        out.append((tuple(shape), str(dtype)))
    return out


def _attrs(node, max_chars: int) -> list:
    """A node's own attributes (what its forward stored on ctx), as 'name: value' lines."""
    lines = []
    for key, value in sorted(getattr(node, "__dict__", {}).items()):
        if key.startswith("_"):
            continue
        text = f"{_shape(value)} {value.dtype}" if hasattr(value, "shape") else repr(value)
        lines.append(f"{key}: {_truncate(text, max_chars)}")
    return lines


def make_dot(var, params: dict | None = None, show_attrs: bool = False,
             show_saved: bool = False, max_attr_chars: int = 50):
    """The autograd graph behind `var` (a tensor or a sequence of tensors) as a
    ``graphviz.Digraph``.

    `params` maps names to tensors (``dict(model.named_parameters())``) to label leaves.

    >>> dot = make_dot(model(x).sum(), params=dict(model.named_parameters()))
    >>> dot.source          # DOT text; dot.render("graph", format="png") draws it
    """
    names = {id(t): name for name, t in (params or {}).items()}
    outputs = list(var) if isinstance(var, (list, tuple)) else [var]
    for t in outputs:
        if not isinstance(t, Tensor):
            raise TypeError(f"make_dot: expected tensors, got {type(t).__name__}")
    node_style = dict(style="filled", shape="box", align="left", fontsize="10",
                      ranksep="0.1", height="0.2", fontname="monospace")
    dot = _digraph()(node_attr=node_style, graph_attr=dict(size="12,12"))
    seen = set()

    def add_leaf(t: Tensor, key: str) -> None:
        label = _shape(t)
        if id(t) in names:
            label = f"{names[id(t)]}\n{label}"
        dot.node(key, label, fillcolor="lightblue")

    def add_node(fn) -> None:
        """Draw `fn` and every node behind it (iteratively: graphs can be deep)."""
        stack = [fn]
        while stack:
            node = stack.pop()
            key = str(id(node))
            if key in seen:
                continue
            seen.add(key)
            # (a leaf's node is drawn by its class name, as torchviz draws it)
            label = "AccumulateGrad" if isinstance(node, AccumulateGrad) else node.name()
            if isinstance(node, AccumulateGrad):
                leaf_key = str(id(node.variable))
                add_leaf(node.variable, leaf_key)
                dot.edge(leaf_key, key)
            else:
                if show_attrs:
                    extra = _attrs(node, max_attr_chars)
                    if extra:
                        label += "\n" + "\n".join(extra)
                if show_saved or show_attrs:
                    for i, (shape, dtype) in enumerate(_saved(node)):
                        saved_key = f"{key}_saved_{i}"
                        dot.node(saved_key, f"saved {i}\n({', '.join(map(str, shape))})\n{dtype}",
                                 fillcolor="orange")
                        dot.edge(saved_key, key, style="dotted", dir="none")
            dot.node(key, label, fillcolor="lightgray")
            for child, _ in node._edges:
                if child is not None:
                    dot.edge(str(id(child)), key)
                    stack.append(child)

    for i, t in enumerate(outputs):
        out_key = f"output_{id(t)}"
        label = ("output" if len(outputs) == 1 else f"output {i}") + f"\n{_shape(t)}"
        dot.node(out_key, label, fillcolor="darkolivegreen1")
        fn = t.grad_fn
        if fn is not None:
            add_node(fn)
            dot.edge(str(id(fn)), out_key)
        elif t.requires_grad:  # a leaf given as output
            add_leaf(t, str(id(t)))
            dot.edge(str(id(t)), out_key)
    return dot
