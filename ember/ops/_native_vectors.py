"""Explicit float32 vectors for numba kernels: a value of `LANES` float32s that lives in one
SIMD register, with what a register-blocked kernel needs: `load`, `store`, `splat`,
`splat_at` (a broadcast load) and `multiply_add`.

numba vectorizes a kernel's innermost loop by itself, but keeps whatever that loop adds
into in memory: a 3x3 convolution written so loaded and stored its running sums for
every multiply-add.  With these vectors a kernel holds a block of sums in registers
across all its input channels and taps, as a hand-written SIMD kernel does
(`_native_blocked_conv.py`).  Each operation is an LLVM instruction on a ``<LANES x
float>`` value, so numba's optimizer sees plain vector code and keeps the values in
registers.

`LANES` is 16 (one AVX-512 register) where the processor has AVX-512, else 8 (one AVX
register).  This module imports numba's extension API: kernels that use it are imported
only where `_native.enabled()`.
"""

from __future__ import annotations

from llvmlite import binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model


def _host_has_avx512() -> bool:
    """Whether LLVM sees AVX-512F on this processor (what numba compiles for); False
    where LLVM cannot tell."""
    try:
        features = llvm.get_host_cpu_features().flatten()
    except RuntimeError:
        return False
    return "+avx512f" in features.split(",")


AVX512 = _host_has_avx512()
LANES = 16 if AVX512 else 8


class Float32Vector(types.Type):
    """numba's type of a vector of LANES float32s."""

    def __init__(self):
        super().__init__(name=f"float32x{LANES}")


float32_vector = Float32Vector()


def _vector_type() -> ir.VectorType:
    return ir.VectorType(ir.FloatType(), LANES)


@register_model(Float32Vector)
class _Float32VectorModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _vector_type())


def _address(context, builder, array_type, array, index):
    """The address of element `index` of a 1-D array, as a pointer to a vector."""
    data = context.make_array(array_type)(context, builder, array).data
    return builder.bitcast(builder.gep(data, [index]), _vector_type().as_pointer())


def _check_array(array) -> None:
    if not (isinstance(array, types.Array) and array.ndim == 1
            and array.dtype == types.float32):
        raise TypeError(f"vectors read and write 1-D float32 arrays, not {array}")


@intrinsic
def load(typingctx, array, index):
    """The LANES float32s of `array` (1-D, contiguous) from element `index` on (unchecked:
    the caller keeps them inside the array; any alignment)."""
    _check_array(array)

    def codegen(context, builder, signature, args):
        return builder.load(_address(context, builder, signature.args[0], *args), align=4)

    return float32_vector(array, index), codegen


@intrinsic
def store(typingctx, array, index, vector):
    """Write `vector` into `array` (1-D, contiguous) from element `index` on (unchecked)."""
    _check_array(array)

    def codegen(context, builder, signature, args):
        pointer = _address(context, builder, signature.args[0], args[0], args[1])
        builder.store(args[2], pointer, align=4)
        return context.get_dummy_value()

    return types.void(array, index, vector), codegen


@intrinsic
def splat(typingctx, value):
    """A vector of LANES copies of `value` (a float32)."""
    if value != types.float32:
        raise TypeError(f"splat takes a float32, not {value}")

    def codegen(context, builder, signature, args):
        return _broadcast(builder, args[0])

    return float32_vector(value), codegen


def _broadcast(builder, value):
    """Codegen: a vector of LANES copies of the float `value`."""
    undefined = ir.Constant(_vector_type(), ir.Undefined)
    first = builder.insert_element(undefined, value, ir.Constant(ir.IntType(32), 0))
    zeros = ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES)
    return builder.shuffle_vector(first, undefined, zeros)


@intrinsic
def multiply_add(typingctx, a, b, c):
    """``a * b + c`` lane by lane: one fused multiply-add where the processor has them
    (LLVM's fmuladd: else a multiply and an add)."""
    def codegen(context, builder, signature, args):
        vector = _vector_type()
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(vector, [vector] * 3), f"llvm.fmuladd.v{LANES}f32")
        return builder.call(function, args)

    return float32_vector(a, b, c), codegen


@intrinsic
def splat_at(typingctx, array, index):
    """A vector of LANES copies of element `index` of `array` (1-D, contiguous float32;
    unchecked, and no negative index counted from the end: the address is the array's
    plus `index`, which lets LLVM fold constant steps into the load)."""
    _check_array(array)

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        return _broadcast(builder, builder.load(builder.gep(data, [args[1]]), align=4))

    return float32_vector(array, index), codegen


@intrinsic
def transpose_tile(typingctx, source, source_at, source_step, target, target_at,
                   target_step):
    """Copy a LANES x LANES tile transposed: row r of `source` (LANES values from element
    ``source_at + r * source_step``) becomes column r of `target` (rows from ``target_at
    + k * target_step``).  In registers: LANES loads, log2(LANES) rounds of LANES
    interleaves (row j zipped with row j + LANES/2 into rows 2j and 2j + 1, low halves
    then high halves: after the last round row k holds element k of every input row),
    LANES stores.  (1-D contiguous float32 arrays, unchecked.)"""
    _check_array(source)
    _check_array(target)

    def codegen(context, builder, signature, args):
        src, src_at, src_step, dst, dst_at, dst_step = args
        lanes, half = LANES, LANES // 2
        i32 = ir.IntType(32)
        low = ir.Constant(ir.VectorType(i32, lanes),
                          [k // 2 + (lanes if k % 2 else 0) for k in range(lanes)])
        high = ir.Constant(ir.VectorType(i32, lanes),
                           [half + k // 2 + (lanes if k % 2 else 0) for k in range(lanes)])
        rows = []
        for r in range(lanes):
            at = builder.add(src_at, builder.mul(src_step, ir.Constant(src_step.type, r)))
            rows.append(builder.load(_address(context, builder, signature.args[0], src, at),
                                     align=4))
        for _ in range(lanes.bit_length() - 1):
            zipped = []
            for j in range(half):
                zipped.append(builder.shuffle_vector(rows[j], rows[j + half], low))
                zipped.append(builder.shuffle_vector(rows[j], rows[j + half], high))
            rows = zipped
        for k in range(lanes):
            at = builder.add(dst_at, builder.mul(dst_step, ir.Constant(dst_step.type, k)))
            builder.store(rows[k], _address(context, builder, signature.args[3], dst, at),
                          align=4)
        return context.get_dummy_value()

    return types.void(source, source_at, source_step, target, target_at,
                      target_step), codegen
