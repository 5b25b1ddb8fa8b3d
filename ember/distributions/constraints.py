"""Constraints: the sets that parameters and values of a distribution must lie in."""

from __future__ import annotations


class Constraint:
    """A set of values; ``check(value)`` is a bool tensor of which entries belong to it."""

    is_discrete = False

    def check(self, value):
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__[1:] + "()"


class _Real(Constraint):
    def check(self, value):
        return value == value  # everything but nan


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return value > self.lower_bound

    def __repr__(self) -> str:
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"Interval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(_Interval):
    """[lower, upper): the support of Uniform."""

    def check(self, value):
        return (value >= self.lower_bound) & (value < self.upper_bound)

    def __repr__(self) -> str:
        return f"HalfOpenInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerInterval(_Interval):
    is_discrete = True

    def check(self, value):
        return (value % 1 == 0) & super().check(value)

    def __repr__(self) -> str:
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _Simplex(Constraint):
    """Non-negative vectors (last dim) summing to 1."""

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Dependent(Constraint):
    """A support that depends on the parameters (the distribution builds the real one)."""

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


real = _Real()
positive = _GreaterThan(0.0)
unit_interval = _Interval(0.0, 1.0)
boolean = _Boolean()
simplex = _Simplex()
dependent = _Dependent()


def greater_than(lower_bound) -> Constraint:
    return _GreaterThan(lower_bound)


def interval(lower_bound, upper_bound) -> Constraint:
    return _Interval(lower_bound, upper_bound)


def half_open_interval(lower_bound, upper_bound) -> Constraint:
    return _HalfOpenInterval(lower_bound, upper_bound)


def integer_interval(lower_bound, upper_bound) -> Constraint:
    return _IntegerInterval(lower_bound, upper_bound)
