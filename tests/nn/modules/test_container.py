"""Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""

from collections import OrderedDict

import pytest

import ember
from ember import nn


class Add(nn.Module):
    """A parameter-free layer whose repr shows its constant."""

    def __init__(self, c):
        super().__init__()
        self.c = c

    def forward(self, x):
        return x + self.c

    def extra_repr(self):
        return f"c={self.c}"


def seq_of(*cs):
    return nn.Sequential(*[Add(c) for c in cs])


def consts(container):
    return [m.c for m in container]


# ----------------------------------------------------------------------------
# Sequential


def test_sequential_forward_and_names():
    s = seq_of(1, 2, 3)
    assert s(ember.tensor([0.0])).tolist() == [6.0]
    assert list(s._modules) == ["0", "1", "2"]
    named = nn.Sequential(OrderedDict([("a", Add(1)), ("b", Add(2))]))
    assert list(named._modules) == ["a", "b"] and named.b.c == 2
    assert repr(named) == "Sequential(\n  (a): Add(c=1)\n  (b): Add(c=2)\n)"
    assert repr(nn.Sequential()) == "Sequential()"


def test_sequential_indexing():
    s = seq_of(1, 2, 3)
    assert s[0].c == 1 and s[-1].c == 3
    sub = s[1:]
    assert type(sub) is nn.Sequential and consts(sub) == [2, 3]
    assert list(sub._modules) == ["1", "2"]  # slices keep the keys, like PyTorch
    with pytest.raises(IndexError, match="index 5 is out of range"):
        s[5]
    with pytest.raises(TypeError):
        s["a"]
    s[1] = Add(20)
    assert consts(s) == [1, 20, 3]
    assert len(s) == 3


def test_sequential_mutation():
    s = seq_of(1, 2, 3)
    del s[0]
    assert consts(s) == [2, 3] and list(s._modules) == ["0", "1"]
    s.append(Add(4)).insert(0, Add(0))
    assert consts(s) == [0, 2, 3, 4]
    s.insert(-1, Add(9))
    assert consts(s) == [0, 2, 3, 9, 4]
    with pytest.raises(IndexError, match="Index out of range: 10"):
        s.insert(10, Add(1))
    popped = s.pop(1)
    assert popped.c == 2 and consts(s) == [0, 3, 9, 4]
    del s[1:3]
    assert consts(s) == [0, 4] and list(s._modules) == ["0", "1"]
    s.extend(seq_of(5, 6))
    assert consts(s) == [0, 4, 5, 6]


def test_sequential_add_mul():
    a, b = seq_of(1, 2), seq_of(3)
    c = a + b
    assert consts(c) == [1, 2, 3] and consts(a) == [1, 2]
    a += b
    assert consts(a) == [1, 2, 3]
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential"):
        a + [Add(1)]
    d = seq_of(1, 2) * 2
    assert consts(d) == [1, 2, 1, 2] and d[0] is d[2]
    e = seq_of(7)
    e *= 3
    assert consts(e) == [7, 7, 7]
    with pytest.raises(ValueError, match="Non-positive multiplication factor"):
        seq_of(1) * 0


def test_sequential_parameters_and_state_dict():
    s = nn.Sequential(nn.Identity(), Add(1))
    s[1].w = nn.Parameter(ember.ones(2))
    assert [n for n, _ in s.named_parameters()] == ["1.w"]
    assert list(s.state_dict()) == ["1.w"]


# ----------------------------------------------------------------------------
# ModuleList


def test_module_list_basics():
    ml = nn.ModuleList([Add(1), Add(2)])
    ml.append(Add(3))
    ml.extend([Add(4)])
    ml += [Add(5)]
    assert consts(ml) == [1, 2, 3, 4, 5] and len(ml) == 5
    assert ml[-1].c == 5 and consts(ml[1:3]) == [2, 3] and type(ml[1:3]) is nn.ModuleList
    ml.insert(0, Add(0))
    assert consts(ml) == [0, 1, 2, 3, 4, 5]
    ml[0] = Add(10)
    assert ml[0].c == 10
    del ml[0]
    assert consts(ml) == [1, 2, 3, 4, 5] and list(ml._modules) == ["0", "1", "2", "3", "4"]
    assert ml.pop(-1).c == 5
    del ml[::2]
    assert consts(ml) == [2, 4]
    combined = ml + nn.ModuleList([Add(6)])
    assert consts(combined) == [2, 4, 6]
    with pytest.raises(IndexError, match="index 10 is out of range"):
        ml[10]
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable"):
        ml.extend(3)
    with pytest.raises(NotImplementedError):
        ml(1)


def test_module_list_repr_groups_repeats():
    ml = nn.ModuleList([Add(1), Add(1), Add(1), Add(2), Add(2), Add(3)])
    assert repr(ml) == ("ModuleList(\n  (0-2): 3 x Add(c=1)\n  (3-4): 2 x Add(c=2)\n"
                        "  (5): Add(c=3)\n)")
    assert repr(nn.ModuleList()) == "ModuleList()"
    nested = nn.ModuleList([nn.Sequential(Add(1)), nn.Sequential(Add(1))])
    assert repr(nested) == ("ModuleList(\n  (0-1): 2 x Sequential(\n    (0): Add(c=1)\n  )\n)")


def test_module_list_repr_matches_torch():
    torch = pytest.importorskip("torch")

    def build(lib):
        n = lib.nn
        return n.Sequential(
            n.ModuleList([n.Identity(), n.Identity(), n.Sequential(n.Identity())]),
            n.ModuleDict({"b": n.Identity(), "a": n.ModuleList()}),
        )

    assert repr(build(ember)) == repr(build(torch))


# ----------------------------------------------------------------------------
# ModuleDict


def test_module_dict():
    md = nn.ModuleDict({"b": Add(1), "a": Add(2)})
    assert list(md.keys()) == ["b", "a"]  # insertion order, not sorted
    md["c"] = Add(3)
    md.update([("d", Add(4))])
    assert list(md) == ["b", "a", "c", "d"] and "c" in md and len(md) == 4
    assert md.pop("a").c == 2 and "a" not in md
    assert [k for k, _ in md.items()] == ["b", "c", "d"]
    assert [m.c for m in md.values()] == [1, 3, 4]
    assert [n for n, _ in md.named_modules()] == ["", "b", "c", "d"]
    del md["b"]
    assert list(md) == ["c", "d"]
    md.clear()
    assert len(md) == 0
    with pytest.raises(TypeError, match="ModuleDict.update should be called with an iterable"):
        md.update(3)
    with pytest.raises(ValueError, match="has length 3; 2 is required"):
        md.update([("a", Add(1), 3)])
    assert repr(nn.ModuleDict({"x": Add(1)})) == "ModuleDict(\n  (x): Add(c=1)\n)"


# ----------------------------------------------------------------------------
# ParameterList / ParameterDict


def test_parameter_list():
    pl = nn.ParameterList([nn.Parameter(ember.ones(2, 3)), ember.zeros(3)])
    assert all(isinstance(p, nn.Parameter) for p in pl)
    pl.append(5)
    assert pl[2] == 5 and len(pl) == 3
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pl[1] = ember.ones(4)
    assert pl[1].shape == (4,) and isinstance(pl[1], nn.Parameter)
    sub = pl[0:2]
    assert type(sub) is nn.ParameterList and sub[0] is pl[0]
    assert pl[-1] == 5
    with pytest.raises(IndexError, match="index 3 is out of range"):
        pl[3]
    with pytest.raises(TypeError, match="ParameterList.extend should be called with an "
                                        "iterable"):
        pl.extend(ember.ones(2))
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        pl()
    text = repr(nn.ParameterList([nn.Parameter(ember.ones(2, 3)), 5]))
    assert text == ("ParameterList(\n    (0): Parameter containing: [ember.float32 of size 2x3]\n"
                    "    (1): Object of type: int\n)")


def test_parameter_dict():
    pd = nn.ParameterDict({"b": ember.ones(1), "a": nn.Parameter(ember.zeros(2))})
    assert list(pd) == ["a", "b"]  # a plain dict is sorted, like PyTorch
    assert isinstance(pd["b"], nn.Parameter)
    pd["c"] = "text"
    assert pd.get("c") == "text" and pd.get("zz", 3) == 3 and "c" in pd
    assert [n for n, _ in pd.named_parameters()] == ["a", "b"]
    ordered = nn.ParameterDict(OrderedDict([("z", ember.ones(1)), ("y", ember.ones(1))]))
    assert list(ordered) == ["z", "y"]
    assert pd.setdefault("d", ember.ones(3)).shape == (3,)
    assert pd.pop("d").shape == (3,) and "d" not in pd
    key, value = pd.popitem()
    assert key == "c" and value == "text"
    merged = pd | ordered
    assert list(merged) == ["a", "b", "z", "y"] and merged["z"] is ordered["z"]
    copied = pd.copy()
    assert copied["a"] is pd["a"]
    pd.clear()
    assert len(pd) == 0
    with pytest.raises(TypeError, match="Index given to ParameterDict cannot be used as a key"):
        pd[1] = ember.ones(1)
    with pytest.raises(RuntimeError, match="ParameterDict should not be called."):
        pd(1)
    text = repr(nn.ParameterDict({"x": ember.ones(2), "y": 3}))
    assert text == ("ParameterDict(\n    (x): Parameter containing: [ember.FloatTensor of size 2]"
                    "\n    (y): Object of type: int\n)")


def test_parameter_containers_repr_match_torch():
    torch = pytest.importorskip("torch")

    def build(lib):
        return (lib.nn.ParameterList([lib.ones(2, 3), lib.zeros(1, dtype=lib.float64), "s"]),
                lib.nn.ParameterDict({"w": lib.ones(4), "n": 1}))

    for ours, theirs in zip(build(ember), build(torch)):
        assert repr(ours).replace("ember.", "torch.") == repr(theirs)
