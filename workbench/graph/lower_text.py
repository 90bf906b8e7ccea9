"""DSL text for one kernel: a graph node or a fused group, as ``@T.prim_func`` source.

A group is a *head* (its first operator) and an *epilogue* (the elementwise members after
it). The head emits its blocks (a matmul, a convolution, a softmax's max and sum...) and an
expression for its value at an output index; the epilogue wraps that expression, so the whole
chain of elementwise operators becomes ONE block (``out[v] = relu(head[v] + bias[v1])``). The
text is parsed by ``workbench.from_source`` into a ``PrimFunc``: every kernel is written in
the DSL, like ``workbench.ops``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from workbench.graph.ir import Node, TensorType
from workbench.graph.ops import kind

DT = "float32"
_INV_SQRT2 = 0.7071067811865476


def lit(value: float) -> str:
    """A float32 literal of the DSL."""
    value = float(value)
    if math.isinf(value):
        return 'T.float32("-inf")' if value < 0 else 'T.float32("inf")'
    return f"T.float32({value!r})"


def bidx(shape: tuple[int, ...], idx: list[str]) -> str:
    """Index into an operand of ``shape`` broadcast (numpy rules) against index ``idx``."""
    aligned = idx[len(idx) - len(shape):]
    parts = ["0" if s == 1 else v for s, v in zip(shape, aligned, strict=True)]
    return ", ".join(parts)


@dataclass
class Operand:
    """A value a kernel reads: a parameter buffer or a scalar literal."""

    name: str
    shape: tuple[int, ...]
    scalar: float | None = None

    def at(self, idx: list[str]) -> str:
        if self.scalar is not None:
            return lit(self.scalar)
        return f"{self.name}[{bidx(self.shape, idx)}]"

    def exact(self, index: list[str]) -> str:
        return f"{self.name}[{', '.join(index)}]"


@dataclass
class KernelText:
    """The pieces of one PrimFunc's source."""

    name: str
    params: list[tuple[str, tuple[int, ...]]]
    allocs: list[str] = field(default_factory=list)
    blocks: list[str] = field(default_factory=list)

    def alloc(self, name: str, shape) -> str:
        self.allocs.append(f"    {name} = T.alloc_buffer({tuple(shape)!r}, \"{DT}\")")
        return name

    def block(self, name: str, extents: list[int], kinds: str, body: str,
              init: str | None = None) -> list[str]:
        """A block over a fresh loop nest; returns the block's iteration variable names."""
        k = len(self.blocks)
        loops = [f"i{k}_{d}" for d in range(len(extents))]
        vs = [f"v{k}_{d}" for d in range(len(extents))]
        if not extents:
            loops, vs, extents, kinds = [f"i{k}_0"], [f"v{k}_0"], [1], "S"
        lines = [f"    for {', '.join(loops)} in T.grid({', '.join(map(str, extents))}):",
                 f"        with T.block(\"{name}\"):",
                 f"            {', '.join(vs)}, = T.axis.remap(\"{kinds}\", [{', '.join(loops)}])"]
        self.blocks.append((lines, body, init, vs))
        return vs

    def source(self) -> str:
        params = ", ".join(f"{n}: T.Buffer({tuple(s)!r}, \"{DT}\")" for n, s in self.params)
        out = ["@T.prim_func", f"def {self.name}({params}):", *self.allocs]
        for lines, body, init, vs in self.blocks:
            out += lines
            if init is not None:
                out += ["            with T.init():", f"                {init(vs)}"]
            out.append(f"            {body(vs)}")
        return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------- elementwise


def elementwise_expr(node: Node, args: list[str], operands: list[Operand], idx: list[str]) -> str:
    """The expression of an elementwise ``node`` over argument expressions ``args``."""
    op, a = node.op, args[0]
    if op in ("add", "sub", "mul", "div"):
        sym = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[op]
        return f"({a} {sym} {args[1]})"
    if op == "relu":
        return f"T.max({a}, {lit(0)})"
    if op == "gelu":
        if node.attrs.get("approximate", "none") == "tanh":
            c = math.sqrt(2.0 / math.pi)
            return (f"({lit(0.5)} * {a} * ({lit(1)} + T.tanh({lit(c)} * ({a} + {lit(0.044715)}"
                    f" * {a} * {a} * {a}))))")
        return f"({lit(0.5)} * {a} * ({lit(1)} + T.erf({a} * {lit(_INV_SQRT2)})))"
    if op == "silu":
        return f"({a} * T.sigmoid({a}))"
    if op in ("sigmoid", "tanh", "exp", "sqrt", "erf"):
        return f"T.{op}({a})"
    if op == "neg":
        return f"({lit(0)} - {a})"
    if op == "batch_norm":
        c = [idx[1]]
        mean, var, gamma, beta = operands[1:]
        return (f"(({a} - {mean.exact(c)}) * T.rsqrt({var.exact(c)} + {lit(node.attrs['eps'])})"
                f" * {gamma.exact(c)} + {beta.exact(c)})")
    raise NotImplementedError(f"no elementwise lowering for {op}")


# ---------------------------------------------------------------------------- heads


class Head:
    """Emits a head operator's blocks into ``kt``; ``value(idx)`` is its value at ``idx``.

    ``target`` names the buffer the head may write its result to directly (the kernel's
    output) when nothing follows it; ``direct`` says whether it did.
    """

    def __init__(self, kt: KernelText, node: Node, operands: list[Operand], out: TensorType,
                 target: str | None):
        self.kt, self.node, self.ops, self.out = kt, node, operands, out
        self.direct = False
        emit = getattr(self, f"_{node.op}", None)
        if emit is None and kind(node.op) == "elementwise":
            emit = self._elementwise
        if emit is None:
            raise NotImplementedError(f"no lowering for operator {node.op}")
        self.value = emit(target)

    def _buffer(self, target: str | None, shape) -> str:
        if target is not None:
            self.direct = True
            return target
        return self.kt.alloc("head", shape)

    def _elementwise(self, target):
        return lambda idx: elementwise_expr(self.node, [o.at(idx) for o in self.ops], self.ops,
                                            idx)

    def _transpose(self, target):
        perm = self.node.attrs["perm"]

        def value(idx):
            src = [""] * len(perm)
            for i, p in enumerate(perm):
                src[p] = idx[i]
            return self.ops[0].exact(src)
        return value

    def _select(self, target):
        axis, index = self.node.attrs["axis"], self.node.attrs["index"]
        return lambda idx: self.ops[0].exact(idx[:axis] + [str(index)] + idx[axis:])

    def _broadcast_to(self, target):
        return lambda idx: self.ops[0].at(idx)

    def _matmul(self, target):
        a, b = self.ops[0], self.ops[1]
        if len(a.shape) < 2 or len(b.shape) < 2:
            raise NotImplementedError("matmul of vectors")
        o, K = self.out.shape, a.shape[-1]
        buf = self._buffer(target, o)
        n = len(o)

        def body(vs):
            out_idx, r = vs[:n], vs[n]
            ai = bidx(a.shape[:-2], out_idx[:-2]).split(", ") if len(a.shape) > 2 else []
            bi = bidx(b.shape[:-2], out_idx[:-2]).split(", ") if len(b.shape) > 2 else []
            prod = f"{a.exact(ai + [out_idx[-2], r])} * {b.exact(bi + [r, out_idx[-1]])}"
            return f"{buf}[{', '.join(out_idx)}] = {buf}[{', '.join(out_idx)}] + {prod}"

        self.kt.block("matmul", list(o) + [K], "S" * n + "R", body,
                      init=lambda vs: f"{buf}[{', '.join(vs[:n])}] = {lit(0)}")
        return lambda idx: f"{buf}[{', '.join(idx)}]"

    def _pad(self, x: Operand, padding, channels_last: bool, fill: float) -> Operand:
        ph, pw = padding
        if ph == 0 and pw == 0:
            return x
        shape = list(x.shape)
        h, w = (1, 2) if channels_last else (2, 3)
        H, W = shape[h], shape[w]
        shape[h], shape[w] = H + 2 * ph, W + 2 * pw
        name = self.kt.alloc(f"pad{len(self.kt.allocs)}", shape)

        def body(vs):
            src = list(vs)
            src[h], src[w] = f"{vs[h]} - {ph}", f"{vs[w]} - {pw}"
            cond = (f"{vs[h]} >= {ph} and {vs[h]} < {H + ph} and {vs[w]} >= {pw} and "
                    f"{vs[w]} < {W + pw}")
            return (f"{name}[{', '.join(vs)}] = T.if_then_else({cond}, {x.exact(src)}, "
                    f"{lit(fill)})")

        self.kt.block("pad", shape, "S" * 4, body)
        return Operand(name, tuple(shape))

    def _conv2d(self, target, channels_last: bool = False):
        x, w = self.ops[0], self.ops[1]
        bias = self.ops[2] if len(self.ops) > 2 else None
        (sh, sw), (dh, dw) = self.node.attrs["stride"], self.node.attrs["dilation"]
        xp = self._pad(x, self.node.attrs["padding"], channels_last, 0.0)
        if channels_last:
            N, P, Q, K = self.out.shape
            R, S, C, _ = w.shape
        else:
            N, K, P, Q = self.out.shape
            _, C, R, S = w.shape
        buf = self._buffer(target if bias is None else None, self.out.shape)

        def body(vs):
            n, k, p, q, c, r, s = vs
            hy, wx = f"{p} * {sh} + {r} * {dh}", f"{q} * {sw} + {s} * {dw}"
            if channels_last:
                out, data, weight = [n, p, q, k], [n, hy, wx, c], [r, s, c, k]
            else:
                out, data, weight = [n, k, p, q], [n, c, hy, wx], [k, c, r, s]
            o = f"{buf}[{', '.join(out)}]"
            return f"{o} = {o} + {xp.exact(data)} * {w.exact(weight)}"

        def init(vs):
            n, k, p, q = vs[:4]
            out = [n, p, q, k] if channels_last else [n, k, p, q]
            return f"{buf}[{', '.join(out)}] = {lit(0)}"

        self.kt.block("conv", [N, K, P, Q, C, R, S], "SSSSRRR", body, init)
        channel = -1 if channels_last else 1
        if bias is None:
            return lambda idx: f"{buf}[{', '.join(idx)}]"
        return lambda idx: f"({buf}[{', '.join(idx)}] + {bias.exact([idx[channel]])})"

    def _conv2d_nhwc(self, target):
        return self._conv2d(target, channels_last=True)

    def _pool(self, target, kernel, stride, padding, is_max: bool):
        x = self.ops[0]
        xp = self._pad(x, padding, False, -math.inf if is_max else 0.0)
        (kh, kw), (sh, sw) = kernel, stride
        buf = self._buffer(target if is_max else None, self.out.shape)

        def body(vs):
            n, c, p, q, r, s = vs
            o = f"{buf}[{n}, {c}, {p}, {q}]"
            src = xp.exact([n, c, f"{p} * {sh} + {r}", f"{q} * {sw} + {s}"])
            return f"{o} = T.max({o}, {src})" if is_max else f"{o} = {o} + {src}"

        init = lit(-math.inf if is_max else 0.0)
        self.kt.block("pool", list(self.out.shape) + [kh, kw], "SSSSRR", body,
                      init=lambda vs: f"{buf}[{', '.join(vs[:4])}] = {init}")
        if is_max:
            return lambda idx: f"{buf}[{', '.join(idx)}]"
        return lambda idx: f"({buf}[{', '.join(idx)}] * {lit(1.0 / (kh * kw))})"

    def _max_pool2d(self, target):
        a = self.node.attrs
        return self._pool(target, a["kernel"], a["stride"], a["padding"], True)

    def _avg_pool2d(self, target):
        a = self.node.attrs
        return self._pool(target, a["kernel"], a["stride"], a["padding"], False)

    def _adaptive_avg_pool2d(self, target):
        _, _, H, W = self.ops[0].shape
        P, Q = self.node.attrs["output_size"]
        if H % P or W % Q:
            raise NotImplementedError("adaptive_avg_pool2d with uneven windows")
        kernel = (H // P, W // Q)
        return self._pool(target, kernel, kernel, (0, 0), False)

    def _mean(self, target):
        x = self.ops[0]
        axes = {a % len(x.shape) for a in self.node.attrs["axes"]}
        keep = self.node.attrs.get("keepdims", True)
        buf = self.kt.alloc("head", self.out.shape)
        count = math.prod(x.shape[a] for a in axes)

        def out_index(vs):
            if keep:
                return ["0" if d in axes else v for d, v in enumerate(vs)]
            return [v for d, v in enumerate(vs) if d not in axes]

        def body(vs):
            o = f"{buf}[{', '.join(out_index(vs)) or '0'}]"
            return f"{o} = {o} + {x.exact(vs)}"

        kinds = "".join("R" if d in axes else "S" for d in range(len(x.shape)))
        self.kt.block("mean", list(x.shape), kinds, body,
                      init=lambda vs: f"{buf}[{', '.join(out_index(vs)) or '0'}] = {lit(0)}")
        return lambda idx: f"({buf}[{', '.join(idx)}] * {lit(1.0 / count)})"

    def _row_stats(self, x: Operand, axes: set, name: str, body_of, init: float) -> str:
        """A buffer over the non-``axes`` dims, reduced over ``axes`` by ``body_of(o, vs)``."""
        shape = [s for d, s in enumerate(x.shape) if d not in axes] or [1]
        buf = self.kt.alloc(name, shape)

        def index(vs):
            kept = [v for d, v in enumerate(vs) if d not in axes]
            return ", ".join(kept) or "0"

        kinds = "".join("R" if d in axes else "S" for d in range(len(x.shape)))
        self.kt.block(name, list(x.shape), kinds,
                      lambda vs: f"{buf}[{index(vs)}] = {body_of(f'{buf}[{index(vs)}]', vs)}",
                      init=lambda vs: f"{buf}[{index(vs)}] = {lit(init)}")
        self._stat_index = index
        return buf

    def _softmax(self, target):
        x = self.ops[0]
        axes = {self.node.attrs["axis"] % len(x.shape)}
        mx = self._row_stats(x, axes, "maxelem", lambda o, vs: f"T.max({o}, {x.exact(vs)})",
                             -math.inf)
        sm = self._row_stats(x, axes,
                             "expsum", lambda o, vs: f"{o} + T.exp({x.exact(vs)} - "
                             f"{mx}[{self._stat_index(vs)}])", 0.0)
        index = self._stat_index
        return lambda idx: (f"(T.exp({x.exact(idx)} - {mx}[{index(idx)}]) / "
                            f"{sm}[{index(idx)}])")

    def _layer_norm(self, target):
        x = self.ops[0]
        nd, eps = self.node.attrs["ndim"], self.node.attrs["eps"]
        axes = set(range(len(x.shape) - nd, len(x.shape)))
        inv_n = 1.0 / math.prod(x.shape[a] for a in axes)
        ms = self._row_stats(x, axes, "mean_sum", lambda o, vs: f"{o} + {x.exact(vs)}", 0.0)
        index = self._stat_index

        def mean(vs):
            return f"{ms}[{index(vs)}] * {lit(inv_n)}"

        vs_ = self._row_stats(x, axes, "var_sum", lambda o, vs: (
            f"{o} + ({x.exact(vs)} - {mean(vs)}) * ({x.exact(vs)} - {mean(vs)})"), 0.0)

        def value(idx):
            norm = (f"(({x.exact(idx)} - {mean(idx)}) * T.rsqrt({vs_}[{index(idx)}] * "
                    f"{lit(inv_n)} + {lit(eps)}))")
            if len(self.ops) > 1:
                norm = f"({norm} * {self.ops[1].exact(idx[-nd:])})"
            if len(self.ops) > 2:
                norm = f"({norm} + {self.ops[2].exact(idx[-nd:])})"
            return norm
        return value

    def _sdpa(self, target):
        q, k, v = self.ops
        L, D = q.shape[-2:]
        S, E = k.shape[-2], v.shape[-1]
        batch = list(self.out.shape[:-2])
        nb = len(batch)
        scale = self.node.attrs.get("scale") or 1.0 / math.sqrt(D)
        causal = self.node.attrs.get("causal", False)

        def bi(shape, vs):
            return bidx(shape[:-2], vs[:nb]).split(", ") if nb else []

        scores = self.kt.alloc("scores", batch + [L, S])

        def score_body(vs):
            l_, s_, d_ = vs[nb:nb + 3]
            o = f"{scores}[{', '.join(vs[:nb] + [l_, s_])}]"
            return (f"{o} = {o} + {q.exact(bi(q.shape, vs) + [l_, d_])} * "
                    f"{k.exact(bi(k.shape, vs) + [s_, d_])}")

        self.kt.block("scores", batch + [L, S, D], "S" * (nb + 2) + "R", score_body,
                      init=lambda vs: f"{scores}[{', '.join(vs[:nb + 2])}] = {lit(0)}")

        def masked(b, l_, s_):
            val = f"{scores}[{', '.join(b + [l_, s_])}] * {lit(scale)}"
            if causal:
                return f"T.if_then_else({s_} <= {l_}, {val}, {lit(-math.inf)})"
            return val

        mx = self.kt.alloc("maxelem", batch + [L])
        sm = self.kt.alloc("expsum", batch + [L])
        row = lambda vs: f"[{', '.join(vs[:nb + 1])}]"  # noqa: E731
        self.kt.block("maxelem", batch + [L, S], "S" * (nb + 1) + "R",
                      lambda vs: f"{mx}{row(vs)} = T.max({mx}{row(vs)}, "
                      f"{masked(vs[:nb], vs[nb], vs[nb + 1])})",
                      init=lambda vs: f"{mx}{row(vs)} = {lit(-math.inf)}")
        self.kt.block("expsum", batch + [L, S], "S" * (nb + 1) + "R",
                      lambda vs: f"{sm}{row(vs)} = {sm}{row(vs)} + T.exp("
                      f"{masked(vs[:nb], vs[nb], vs[nb + 1])} - {mx}{row(vs)})",
                      init=lambda vs: f"{sm}{row(vs)} = {lit(0)}")
        buf = self._buffer(target, self.out.shape)

        def out_body(vs):
            b, l_, e_, s_ = vs[:nb], vs[nb], vs[nb + 1], vs[nb + 2]
            o = f"{buf}[{', '.join(b + [l_, e_])}]"
            p = f"T.exp({masked(b, l_, s_)} - {mx}[{', '.join(b + [l_])}])"
            return (f"{o} = {o} + {p} / {sm}[{', '.join(b + [l_])}] * "
                    f"{v.exact(bi(v.shape, vs) + [s_, e_])}")

        self.kt.block("attention", batch + [L, E, S], "S" * (nb + 2) + "R", out_body,
                      init=lambda vs: f"{buf}[{', '.join(vs[:nb + 2])}] = {lit(0)}")
        return lambda idx: f"{buf}[{', '.join(idx)}]"


def kernel_text(name: str, members: list[Node], inputs: dict[str, TensorType],
                scalars: dict[str, np.ndarray], out: TensorType) -> tuple[str, list[str]]:
    """DSL source of the kernel computing the chain ``members``; returns (source, inputs).

    ``inputs`` are the kernel's array inputs (value name -> type), in parameter order; the
    output is the last parameter, ``out``.
    """
    params = {value: f"in{i}" for i, value in enumerate(inputs)}
    kt = KernelText(name, [(params[v], t.shape) for v, t in inputs.items()] + [("out", out.shape)])

    def operand(value: str) -> Operand:
        if value in scalars:
            return Operand(value, (), float(scalars[value]))
        return Operand(params[value], inputs[value].shape)

    head_node, epilogue = members[0], members[1:]
    head = Head(kt, head_node, [operand(i) for i in head_node.inputs], head_node.type,
                None if epilogue else "out")
    if not head.direct:
        def body(idx):
            value = head.value(idx)
            previous = head_node.name
            for member in epilogue:
                args = [value if i == previous else operand(i).at(idx) for i in member.inputs]
                ops = [operand(i) if i != previous else None for i in member.inputs]
                value = elementwise_expr(member, args, ops, idx)
                previous = member.name
            return f"out[{', '.join(idx)}] = {value}"

        kt.block("out", list(out.shape), "S" * len(out.shape), body)
    return kt.source(), list(inputs)
