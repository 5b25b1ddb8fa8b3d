"""Products: matmul/mm/bmm (MatMul), addmm (Gemm: nn.Linear on 2-D inputs), the other
fused products, einsum (Einsum), embedding lookups (Gather)."""

from __future__ import annotations

from ...ops import einsum, embedding, linalg, shape
from .._convert import Call
from .._trace import Source


def _transposed_source(c: Call, i: int):
    """When argument i is ``w.t()`` of a 2-D tensor w, the ONNX name of w (else None):
    Gemm then reads w with transB=1, keeping the parameter as it is."""
    src = c.rec.sources[i]
    if not isinstance(src, Source) or src.kind != "op":
        return None
    producer = c.ex.trace.records[src.ref[0]]
    if producer.kind != "op" or len(producer.args[0].shape) != 2:
        return None
    is_t = producer.cls is shape.T or (
        producer.cls is shape.Transpose and set(producer.args[1:3]) == {0, 1}) or (
        producer.cls is shape.Permute and tuple(producer.args[1]) == (1, 0))
    if not is_t or not isinstance(producer.sources[0], Source):
        return None
    check = c.ex.check.records[producer.index] if c.ex.check is not None else None
    return c.ex.value(producer.sources[0], check.sources[0] if check else None, producer)


def _matmul(c: Call, a: str, b: str, ndim_a: int, ndim_b: int) -> str:
    """MatMul; a vector second operand of a matrix product goes in as a column.

    NOTE: onnxruntime (1.2x, all optimizations on) fuses Transpose + MatMul into a
    wrong result when the second operand is 1-D; a (k, 1) column avoids that fusion.
    """
    if ndim_b != 1 or ndim_a < 2:
        return c.op("MatMul", a, b)
    return c.squeeze(c.op("MatMul", a, c.unsqueeze(b, [1])), [-1])


def convert_matmul(c: Call) -> None:
    c.done(_matmul(c, c.input(0), c.input(1), len(c.shape(0)), len(c.shape(1))))


def convert_add_product(c: Call) -> None:
    """``beta * input + alpha * product(a, b)``."""
    kind, beta, alpha = c.get(3, "kind"), c.get(4, "beta"), c.get(5, "alpha")
    a, b = c.input(1), None
    dtype = c.out_dtype()
    if kind == "addmm":
        w = _transposed_source(c, 2)
        b = w if w is not None else c.input(2)
        bias = c.input(0) if beta != 0 else ""
        c.done(c.op("Gemm", a, b, bias, alpha=float(alpha), beta=float(beta),
                    transB=int(w is not None)))
        return
    b = c.input(2)
    if kind == "addr":
        prod = c.op("Mul", c.unsqueeze(a, [1]), c.unsqueeze(b, [0]))
    elif kind == "addbmm":
        prod = c.reduce("ReduceSum", c.op("MatMul", a, b), [0], False)
    else:  # addmv, baddbmm
        prod = _matmul(c, a, b, len(c.shape(1)), len(c.shape(2)))
    if alpha != 1:
        prod = c.op("Mul", prod, c.const(alpha, dtype))
    if beta == 0:
        c.done(prod)
        return
    base = c.input(0)
    if beta != 1:
        base = c.op("Mul", base, c.const(beta, dtype))
    c.done(c.op("Add", base, prod))


def convert_einsum(c: Call) -> None:
    terms, out_term = c.param("terms"), c.param("out_term")
    letters = sorted(set("".join(terms) + out_term))
    if len(letters) <= 26 and any(ch.isupper() for ch in letters):
        rename = dict(zip(letters, "abcdefghijklmnopqrstuvwxyz"))
        terms = ["".join(rename[ch] for ch in t) for t in terms]
        out_term = "".join(rename[ch] for ch in out_term)
    equation = ",".join(terms) + "->" + out_term
    c.done(c.op("Einsum", *c.inputs(), equation=equation))


def convert_embedding(c: Call) -> None:
    c.done(c.op("Gather", c.input(0), c.input(1), axis=0))


CONVERTERS = {
    linalg.MatMul: convert_matmul,
    linalg.AddProduct: convert_add_product,
    einsum.Einsum: convert_einsum,
    embedding.Embedding: convert_embedding,
}
