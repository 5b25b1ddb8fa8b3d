"""ember.viz.make_dot: nodes and edges of known graphs, labels, saved tensors, and the
messages when the graphviz package or the `dot` program is missing."""

import shutil
import sys

import pytest

import ember
from ember import nn

graphviz = pytest.importorskip("graphviz")
from ember import viz  # noqa: E402


def _count(dot):
    nodes = [line for line in dot.body if "->" not in line and "[label=" in line]
    edges = [line for line in dot.body if "->" in line]
    return len(nodes), len(edges)


def test_nodes_and_edges_of_a_known_graph():
    a = ember.randn(3, requires_grad=True)
    b = ember.randn(3, requires_grad=True)
    y = (a * b).sum()
    dot = viz.make_dot(y, params={"a": a, "b": b})
    # a, b, 2 AccumulateGrad, MulBackward0, SumBackward0, output
    assert _count(dot) == (7, 6)
    src = dot.source
    for label in ("MulBackward0", "SumBackward0", "AccumulateGrad", "a\n(3)", "b\n(3)"):
        assert label in src
    saved = viz.make_dot(y, params={"a": a, "b": b}, show_saved=True)
    assert _count(saved) == (9, 8)  # Mul saved its two inputs
    assert "saved 0\n(3)\nfloat32" in saved.source


def test_shared_inputs_and_several_outputs():
    x = ember.randn(2, requires_grad=True)
    y = x.exp()
    outs = (y * 2, y.sin())
    dot = viz.make_dot(outs)
    # x, AccumulateGrad, Exp, Mul, Sin, 2 outputs; x->acc, acc->exp, exp->mul, exp->sin, 2 out
    assert _count(dot) == (7, 6)
    assert "output 0" in dot.source and "output 1" in dot.source


def test_mlp_parameter_names_and_shapes():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1))
    dot = viz.make_dot(model(ember.randn(2, 4)), params=dict(model.named_parameters()))
    src = dot.source
    for name, p in model.named_parameters():
        assert f"{name}\n({', '.join(map(str, p.shape))})" in src
    assert src.count("AccumulateGrad") == 4


def test_show_attrs_truncates():
    x = ember.randn(3, 4, requires_grad=True)
    y = x.sum(dim=1)
    dot = viz.make_dot(y, show_attrs=True, max_attr_chars=5)
    assert "SumBackward" in dot.source


def test_deep_graph_does_not_recurse():
    x = ember.randn(2, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    dot = viz.make_dot(y)
    assert _count(dot) == (3003, 3002)


def test_missing_graphviz_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    monkeypatch.setattr(viz, "_digraph_class", None)
    with pytest.raises(ImportError, match=r"ember\[viz\]"):
        viz.make_dot(ember.randn(2, requires_grad=True).exp())


def test_render_without_dot_explains(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` on PATH
    dot = viz.make_dot(ember.randn(2, requires_grad=True).exp())
    assert not viz.dot_available()
    with pytest.raises(RuntimeError, match="Graphviz's `dot` program"):
        dot.render(str(tmp_path / "g"), format="png")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program not installed")
def test_render_png(tmp_path):
    dot = viz.make_dot(ember.randn(2, requires_grad=True).exp().sum())
    path = dot.render(str(tmp_path / "graph"), format="png", cleanup=True)
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
