"""ember.utils._nested.map_nested: the walk shared by jit's templates and DataParallel."""

from collections import namedtuple

from ember._core.nested import map_nested

Pair = namedtuple("Pair", "first second")


def test_maps_leaves_in_every_container_kind_and_keeps_the_rest():
    tree = {"a": (1, [2, "x"]), "b": Pair(3, {"c": 4.5}), "d": None}
    out = map_nested(tree, int, lambda n: n * 10)
    assert out == {"a": (10, [20, "x"]), "b": Pair(30, {"c": 4.5}), "d": None}
    assert type(out["b"]) is Pair and type(out["a"][1]) is list


def test_visits_leaves_in_order():
    seen = []
    map_nested([3, (1, {"k": 2})], int, seen.append)
    assert seen == [3, 1, 2]


def test_a_leaf_at_the_top_and_a_leaf_type_that_is_a_container():
    assert map_nested(7, int, str) == "7"
    assert map_nested([(1, 2), 3], tuple, len) == [2, 3]
