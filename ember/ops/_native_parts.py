"""Native parts: kernels a worker thread (ops/_workers.py) runs without taking the GIL.

A worker polls for work inside numba code.  A Python part makes it return to Python and
wait for the GIL, which the posting thread holds until it enters a kernel of its own:
the worker then starts ~40 us late (its wake-up from the GIL's wait, on the VM).  A
native part is a C function ``void part(int64 block)``, compiled by numba's `cfunc`,
whose one argument is the address of an int64 array describing the work (arrays by
address and length, numbers as float64 bits): the worker calls it directly, within a
few microseconds of its posting.

This module holds the numba plumbing that needs (numba has no public way to call a C
function, or to read an array, given only its address as an integer) and the compiler
of parts.  It imports numba, so it is imported only where `native.enabled()`.
"""

from __future__ import annotations

import types as pytypes

import numpy as np
from llvmlite import ir
from numba import carray, cfunc, types
from numba.extending import intrinsic

from . import _native as native

BLOCK_SIZE = 32  # int64s in a part's argument block


def _call_by_address(context, builder, signature, args):
    """Codegen: call the C function at address args[0] with the rest of `args`, its
    parameter types those of the arguments as numba typed them (no result)."""
    parameters = [context.get_value_type(t) for t in signature.args[1:]]
    kind = ir.FunctionType(ir.VoidType(), parameters)
    builder.call(builder.inttoptr(args[0], kind.as_pointer()), args[1:])
    return context.get_dummy_value()


@intrinsic
def call_address(typingctx, function, argument):
    """Call the C function ``void f(int64)`` at address `function` with `argument`."""
    return types.void(types.int64, types.int64), _call_by_address


@intrinsic
def call_gemm(typingctx, function, order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
              beta, c, ldc):
    """Call the CBLAS product (sgemm or dgemm) at address `function`; the matrices' addresses
    as int64s, the enums int32s, the sizes the library's integer type."""
    return types.void(function, order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
                      beta, c, ldc), _call_by_address


@intrinsic
def call_gemv(typingctx, function, order, trans, m, n, alpha, a, lda, x, incx, beta, y,
              incy):
    """Call the CBLAS matrix-vector product (sgemv or dgemv) at address `function`, its
    arguments given as `call_gemm`'s."""
    return types.void(function, order, trans, m, n, alpha, a, lda, x, incx, beta, y,
                      incy), _call_by_address


@intrinsic
def as_type_of(typingctx, example, value):
    """`value` converted to the integer type of `example` (an int32 or int64 zero), as
    typed when the kernel is compiled: one call site serves either CBLAS interface."""
    def codegen(context, builder, signature, args):
        return context.cast(builder, args[1], signature.args[1], signature.return_type)

    return example(example, value), codegen


@intrinsic
def call_plain(typingctx, function):
    """Call the C function at address `function` that takes no argument (its result, as
    sched_yield's, is dropped)."""
    return types.void(function), _call_by_address


@intrinsic
def release_fence(typingctx):
    """A release fence: no store before it is moved after a store that follows it (on
    x86, whose stores are seen in order, it emits no instruction; it binds the compiler).
    A posting thread's description of a part, then the flag that hands it over."""
    def codegen(context, builder, signature, args):
        builder.fence("release")
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def ticks(typingctx):
    """The CPU's time-stamp counter (an int64 that grows at a fixed rate on x86-64): a
    clock that compiled code reads in a few nanoseconds, without a system call."""
    def codegen(context, builder, signature, args):
        counter = builder.module.declare_intrinsic("llvm.readcyclecounter", (),
                                                   ir.FunctionType(ir.IntType(64), ()))
        return builder.call(counter, ())

    return types.int64(), codegen


@intrinsic
def pointer_to(typingctx, address, dtype):
    """`address` (an int64) as a pointer to elements of `dtype` (a NumPy scalar type)."""
    target = types.CPointer(dtype.instance_type)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(target))

    return target(types.int64, dtype), codegen


@native.kernel(inline=True)
def array_at(address, length, dtype):
    """The 1-D array of `length` elements of `dtype` at `address` (the memory of a NumPy
    array that the posting thread keeps alive until the part is done)."""
    return carray(pointer_to(address, dtype), length)


@native.kernel(inline=True)
def block_at(address):
    """A part's argument block: (its int64s, the same memory as float64s)."""
    return (carray(pointer_to(address, np.int64), BLOCK_SIZE),
            carray(pointer_to(address, np.float64), BLOCK_SIZE))


def compile_part(fn) -> int:
    """The address of `fn` compiled as a C function ``void fn(int64 block)`` (cached on
    disk as numba caches kernels; the kernels `fn` names are compiled first)."""
    source = native._with_kernels_compiled(fn)
    return cfunc(types.void(types.int64), nopython=True, cache=True,
                 error_model="numpy")(source).address


def compile_bound(template, name: str, **names) -> int:
    """`compile_part` of `template` with the global `names` bound to the values given
    (a kernel, a dtype), under `name`.

    NOTE: numba names a C entry point's disk cache after its code object: bindings of one
    template sharing its code would load each other's machine code (a GELU gradient came
    out as GELU), so each gets a code object of its own name."""
    code = template.__code__.replace(co_name=name)
    if hasattr(code, "co_qualname"):  # (Python 3.11 on)
        code = code.replace(co_qualname=name)
    fn = pytypes.FunctionType(code, dict(template.__globals__, **names), name)
    fn.__qualname__ = name
    return compile_part(fn)
