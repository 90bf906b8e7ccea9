"""Adapters from the explorer's panes to the visualizers.

Every picture or highlighted text the explorer shows is made here, and only here, so that
moving to ``workbench.viz`` (IR/code HTML, diffs, loop-nest drawing, access plot, roofline,
footprints) is an edit of this one file. Each adapter returns plain data: an HTML string for
a widget's ``value`` (so the state is saved in the notebook and readable in tests) and, where
a test wants numbers, the numbers it drew.
"""

from __future__ import annotations

import difflib
import html
from dataclasses import dataclass

from workbench.ir import BufferLoad, BufferStore, For, PrimFunc
from workbench.ir.functor import collect

KIND_STYLE = {
    "serial": ("box", "white"),
    "parallel": ("box", "#cfe8ff"),
    "vectorized": ("box", "#d9f7d9"),
    "unroll": ("box", "#fff2c2"),
    "thread_binding": ("box", "#f3d9ff"),
}


@dataclass(frozen=True)
class HTMLView:
    """HTML for a notebook and the same content as text."""

    html: str
    text: str

    def _repr_html_(self) -> str:
        return self.html

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class DiffView:
    """A unified diff as HTML and text; ``n_changed`` counts added plus removed lines."""

    html: str
    text: str
    n_changed: int

    def _repr_html_(self) -> str:
        return self.html

    def __str__(self) -> str:
        return self.text


# --- text panes --------------------------------------------------------------------------


def ir_html(func: PrimFunc, loop: str | None = None):
    """The function as highlighted TVMScript-like text (``workbench.viz.ir_html``), the line
    that opens ``loop`` marked."""
    from workbench import viz

    return viz.ir_html(func, highlight=loop)


def code_html(source: str, loop: str | None = None):
    """Python (Numba or CUDA) source, highlighted (``workbench.viz.code_html``), the lines
    that make loop ``loop`` marked: its ``for loop in ...`` or, bound to a GPU axis,
    ``loop = cuda.threadIdx.x`` (what Compiler Explorer does between source and asm)."""
    import re

    from workbench import viz

    lines = []
    if loop is not None:
        pattern = re.compile(rf"^\s*(for {re.escape(loop)} in |{re.escape(loop)} = cuda\.)")
        lines = [n for n, line in enumerate(source.splitlines(), 1) if pattern.search(line)]
    return viz.code_html(source, highlight_lines=lines)


def plain_html(text: str, language: str = "text") -> str:
    """Preformatted text (LLVM IR, assembly) without highlighting."""
    return f"<pre class='wb-{language}' style='font-size:11px'>{html.escape(text)}</pre>"


def head(text: str, lines: int = 400) -> str:
    """The first ``lines`` lines of ``text``, with a note of how many more there are."""
    parts = text.splitlines()
    more = f"\n... ({len(parts) - lines} more lines)" if len(parts) > lines else ""
    return "\n".join(parts[:lines]) + more


def error_html(error: Exception) -> str:
    """A rendered ``ScheduleError`` (or any error's repr) for a pane."""
    render = getattr(error, "_repr_html_", None)
    if callable(render):
        return render()
    return f"<span style='color:#b00'>{html.escape(repr(error))}</span>"


# --- target code ---------------------------------------------------------------------------


def cuda_source(func: PrimFunc) -> str:
    """The ``@cuda.jit`` Python source of ``func`` on the ``cuda`` target (no GPU needed).

    Raises the build's error (e.g. ``UnboundKernelError`` for a loop nest bound to no GPU
    axis); the explorer shows it rendered in the code pane.
    """
    from workbench.backends import lower
    from workbench.backends.numba_cuda import generate_cuda_source

    return generate_cuda_source(lower(func))


def machine_code(func: PrimFunc, target: str) -> tuple[str, str]:
    """HTML of the machine code tabs: (LLVM IR or PTX, assembly).

    ``cpu``: the kernel is built (served from the kernel cache when measured) and its LLVM
    IR and assembly shown. ``cuda``: the PTX on a real GPU; under the CUDA simulator nothing
    is compiled, which the tab says (the CUDA source is in the "generated source" tab).
    """
    from workbench.backends import build

    if target == "cpu":
        kernel = build(func, target="cpu")
        return plain_html(head(kernel.llvm), "llvm"), plain_html(head(kernel.asm), "asm")
    from workbench.backends.numba_cuda import simulator_enabled

    if simulator_enabled():
        note = (
            "<i class='wb-no-ptx'>no PTX under the CUDA simulator (NUMBA_ENABLE_CUDASIM=1): "
            "nothing is compiled; the CUDA source is in the 'generated source' tab</i>"
        )
        return note, note
    from workbench.widgets.runner import random_inputs

    kernel = build(func, target="cuda")
    kernel(*random_inputs(func))  # Numba compiles on the first launch
    sass = "<i>SASS is not shown: read the PTX, or run cuobjdump on the cubin</i>"
    return plain_html(head(kernel.ptx), "ptx"), sass


def _diff(a: str, b: str, name_a: str, name_b: str) -> DiffView:
    lines = list(difflib.unified_diff(a.splitlines(), b.splitlines(), name_a, name_b, lineterm=""))
    changed = sum(1 for ln in lines if ln[:1] in "+-" and not ln.startswith(("+++", "---")))
    colour = {"+": "#e6ffec", "-": "#ffebe9", "@": "#ddf4ff"}
    rows = "".join(
        f"<div style='background:{colour.get(ln[:1], 'white')}'>{html.escape(ln) or '&nbsp;'}</div>"
        for ln in lines
    )
    text = "\n".join(lines) or "(no change)"
    body = rows or "<i>no change</i>"
    return DiffView(f"<pre class='wb-diff' style='font-size:12px'>{body}</pre>", text, changed)


def ir_diff(a: PrimFunc, b: PrimFunc):
    from workbench import viz

    return viz.ir_diff(a, b)


def code_diff(a: str, b: str):
    from workbench import viz

    return viz.code_diff(a, b)


# --- loop-nest drawing -------------------------------------------------------------------


def loop_nest_graph(func: PrimFunc):
    """The loop nest as a graphviz Digraph (``workbench.viz.loop_nest_graph``)."""
    from workbench import viz

    return viz.loop_nest_graph(func)


def loop_nest_svg(func: PrimFunc) -> str:
    """The drawing as inline SVG (empty string with a note when ``dot`` is missing)."""
    import graphviz

    try:
        svg = loop_nest_graph(func).pipe(format="svg").decode()
    except graphviz.ExecutableNotFound:
        return "<i>install Graphviz (the dot program) to see the loop-nest drawing</i>"
    return svg[svg.find("<svg") :]


# --- footprints and warnings -------------------------------------------------------------


def tile_footprint(func: PrimFunc, loop: str) -> dict[str, int]:
    """Bytes of each buffer touched by one iteration of the loop ``loop``'s whole body.

    Indices are bounded over the loops inside ``loop`` (outer loops at their first value),
    on the lowered function where block bindings are substituted.
    """
    from workbench.backends import lower
    from workbench.ir.arith import int_bounds
    from workbench.schedule.tree import walk

    lowered = lower(func)
    target = next(
        (n for n, _ in walk(lowered.body) if isinstance(n, For) and n.loop_var.name == loop), None
    )
    if target is None:
        return {}
    ranges = {}
    for node, ancestors in walk(lowered.body):
        if isinstance(node, For):
            inside = node is target or any(a is target for a in ancestors)
            extent = int(getattr(node.extent, "value", 1))
            ranges[node.loop_var] = (0, extent - 1) if inside else (0, 0)
    spans: dict[str, tuple[list, int]] = {}
    for access in collect(target, lambda n: isinstance(n, BufferLoad | BufferStore)):
        buf = access.buffer
        dims = []
        for index in access.indices:
            lo, hi = int_bounds(index, ranges)
            dims.append((lo, hi))
        old = spans.get(buf.name)
        if old is not None:
            dims = [
                (
                    min(a[0], b[0]) if None not in (a[0], b[0]) else None,
                    max(a[1], b[1]) if None not in (a[1], b[1]) else None,
                )
                for a, b in zip(old[0], dims, strict=True)
            ]
        spans[buf.name] = (dims, _itemsize(buf.dtype))
    out = {}
    for name, (dims, size) in spans.items():
        count = 1
        for lo, hi in dims:
            count *= (hi - lo + 1) if lo is not None and hi is not None else 1
        out[name] = count * size
    return out


def _itemsize(dtype: str) -> int:
    import numpy as np

    return np.dtype(dtype).itemsize


def cache_sizes() -> dict[str, int]:
    """L1d, L2 and last-level cache sizes in bytes, read from the machine."""
    from pathlib import Path

    sizes = {"L1": 32 * 1024, "L2": 1024 * 1024}
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for index in sorted(base.glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        scale = {"K": 1024, "M": 1024**2}.get(text[-1], 1)
        sizes[f"L{level}"] = int(text.rstrip("KM")) * scale
    return sizes


def footprint_warnings(
    func: PrimFunc, loop: str, caches: dict[str, int] | None = None
) -> list[str]:
    """Warnings for a loop: its tile footprint against L1/L2, vector alignment."""
    caches = cache_sizes() if caches is None else caches
    warnings = cache_warnings(func, loop, caches)
    for node in collect(func.body, lambda n: isinstance(n, For)):
        extent = getattr(node.extent, "value", None)
        if node.kind.value == "vectorized" and extent is not None and extent % 8:
            warnings.append(
                f"vectorized loop '{node.loop_var.name}' has {extent} lanes, "
                "not a multiple of 8 float32 (one AVX2 register)"
            )
    return warnings


def capacities(target: str) -> dict[str, int]:
    """What a tile is compared with: this CPU's L1/L2, or a GPU block's shared memory."""
    if target == "cuda":
        from workbench.viz.advice import SHARED_BYTES_PER_BLOCK

        return {"shared": SHARED_BYTES_PER_BLOCK}
    return cache_sizes()


def target_warnings(func: PrimFunc, loop: str, target: str, caches: dict[str, int]) -> list[str]:
    """The loop's footprint against ``caches``, then the schedule's warnings for ``target``
    (``workbench.viz.schedule_warnings``: vector width, cores and unroll size on the CPU;
    threads per block and shared memory on CUDA)."""
    from workbench.viz import schedule_warnings

    return cache_warnings(func, loop, caches) + schedule_warnings(func, target)


def cache_warnings(func: PrimFunc, loop: str, caches: dict[str, int]) -> list[str]:
    """One warning when the loop's footprint exceeds a level of ``caches`` (the largest)."""
    total = sum(tile_footprint(func, loop).values())
    for level in ("L2", "L1", "shared"):
        if level in caches and total > caches[level]:
            return [
                f"loop '{loop}' touches {total / 1024:.0f} KiB (all its iterations), more "
                f"than {level} ({caches[level] // 1024} KiB)"
            ]
    return []


def access_pane(func: PrimFunc, loop: str, target: str) -> tuple[dict, list[str], str]:
    """The access tab's text part: ``(footprint, warnings, html)`` of ``loop`` on ``target``."""
    caches = capacities(target)
    footprint = tile_footprint(func, loop)
    warnings = target_warnings(func, loop, target, caches)
    items = "".join(f"<li>⚠ {html.escape(w)}</li>" for w in warnings) or "<li>no warning</li>"
    rows = "".join(
        f"<tr><td>{k}</td><td>{v / 1024:.1f} KiB</td></tr>" for k, v in footprint.items()
    )
    pane = (
        f"<b>loop <code>{html.escape(loop)}</code> (all its iterations, outer loops at "
        f"one value) touches</b><table>{rows}</table><ul class='wb-warnings'>{items}</ul>"
        + footprint_svg(footprint, caches)
    )
    return footprint, warnings, pane


# --- header and history table ----------------------------------------------------------


def header_html(node, target: str) -> str:
    """``matmul 512x512 · target cpu · node 3 (7 trace steps) · 1.2 ms · 230 GFLOP/s``."""
    func = node.schedule.func_before
    shape = "x".join(str(d) for d in func.params[0].shape)
    m = node.measurement
    cost = f" · {m.ms:.3f} ms · {m.result.gflops or 0:.1f} GFLOP/s" if m else ""
    return (
        f"<b>{html.escape(func.name)}</b> {shape} · target {target} · node "
        f"{node.id} ({len(node.trace)} trace steps){cost}"
    )


def history_html(frame, history) -> str:
    """The history table (3 significant digits, "…" until measured) and the tree as text."""
    table = frame.drop(columns=["current"]).to_html(
        index=False, float_format=lambda v: f"{v:.3g}", na_rep="…", classes="wb-history"
    )
    return table + "<pre>" + html.escape(str(history)) + "</pre>"


# --- figures (inline SVG, drawn directly: a matplotlib figure takes ~1 s here) -------------


def _svg(width: int, height: int, body: list[str], gid: str) -> str:
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"id='{gid}' font-family='sans-serif' font-size='10'>" + "".join(body) + "</svg>"
    )


def footprint_svg(footprint: dict[str, int], caches: dict[str, int]) -> str:
    """Horizontal bars of each buffer's footprint (KiB, log scale) with L1/L2 marks."""
    import math

    width, left, bar = 420, 70, 18
    height = 30 + bar * max(len(footprint), 1) + 20
    top_kib = max([v / 1024 for v in footprint.values()] + [caches.get("L2", 1 << 20) / 1024])
    scale = (width - left - 20) / math.log10(top_kib * 2 + 1)

    def x(kib: float) -> float:
        return left + scale * math.log10(kib + 1)

    body = []
    for row, (name, size) in enumerate(footprint.items()):
        y = 20 + row * bar
        body.append(
            f"<text x='4' y='{y + 12}'>{html.escape(name)}</text>"
            f"<rect class='footprint-bar' data-bytes='{size}' x='{left}' y='{y}' "
            f"width='{x(size / 1024) - left:.1f}' height='{bar - 4}' fill='#4c72b0'/>"
            f"<text x='{x(size / 1024) + 3:.1f}' y='{y + 12}'>{size / 1024:.1f} KiB</text>"
        )
    for level, colour in (("L1", "#c44e52"), ("L2", "#dd8452")):
        if level in caches:
            cx = x(caches[level] / 1024)
            body.append(
                f"<line x1='{cx:.1f}' x2='{cx:.1f}' y1='14' y2='{height - 16}' "
                f"stroke='{colour}' stroke-dasharray='4 3'/>"
                f"<text x='{cx + 2:.1f}' y='11' fill='{colour}'>{level} "
                f"{caches[level] // 1024} KiB</text>"
            )
    body.append(f"<text x='{left}' y='{height - 4}'>KiB touched by one iteration (log)</text>")
    return _svg(width, height, body, "wb-footprint")


def roofline_svg(points: list[tuple[str, float, float, bool]], peaks) -> str:
    """A log-log roofline with the explorer's points ``(label, intensity, GFLOP/s, measured)``;
    consecutive points of one kind are joined by arrows (the path of the schedule)."""
    import math

    width, height, pad = 460, 300, 44
    xs = [p[1] for p in points] + [peaks.ridge_point]
    ys = [p[2] for p in points if p[2] > 0] + [peaks.gflops]
    x0, x1 = math.log10(min(xs) / 4), math.log10(max(xs) * 4)
    y0, y1 = math.log10(min(ys + [min(xs) / 4 * peaks.gbps]) / 2), math.log10(peaks.gflops * 2)

    def px(v: float) -> float:
        return pad + (math.log10(v) - x0) / (x1 - x0) * (width - pad - 10)

    def py(v: float) -> float:
        return height - pad + 10 - (math.log10(v) - y0) / (y1 - y0) * (height - pad - 10)

    low, high, ridge = 10**x0, 10**x1, peaks.ridge_point
    body = [
        "<defs><marker id='wb-arrow' markerWidth='8' markerHeight='8' refX='7' refY='3' "
        "orient='auto'><path d='M0,0 L7,3 L0,6' fill='none' stroke='#555'/></marker></defs>",
        f"<line class='memory-roof' x1='{px(low):.1f}' y1='{py(low * peaks.gbps):.1f}' "
        f"x2='{px(ridge):.1f}' y2='{py(peaks.gflops):.1f}' stroke='#333' stroke-width='2'/>",
        f"<line class='compute-roof' x1='{px(ridge):.1f}' y1='{py(peaks.gflops):.1f}' "
        f"x2='{px(high):.1f}' y2='{py(peaks.gflops):.1f}' stroke='#333' stroke-width='2' "
        "stroke-dasharray='6 3'/>",
        f"<text x='{px(high) - 4:.1f}' y='{py(peaks.gflops) - 4:.1f}' text-anchor='end'>"
        f"{peaks.gflops:.0f} GFLOP/s</text>",
        f"<text x='{px(low) + 4:.1f}' y='{py(low * peaks.gbps) - 6:.1f}'>"
        f"{peaks.gbps:.0f} GB/s</text>",
        f"<line x1='{pad}' y1='{height - pad + 10}' x2='{width - 10}' y2='{height - pad + 10}' "
        "stroke='#999'/>",
        f"<line x1='{pad}' y1='10' x2='{pad}' y2='{height - pad + 10}' stroke='#999'/>",
        f"<text x='{width / 2:.0f}' y='{height - 8}'>FLOP / byte (log)</text>",
        f"<text x='10' y='{height / 2:.0f}' transform='rotate(-90 10 {height / 2:.0f})'>"
        "GFLOP/s (log)</text>",
    ]
    for measured, colour in ((False, "#8c8c8c"), (True, "#c44e52")):
        chosen = [p for p in points if p[3] == measured and p[2] > 0]
        for a, b in zip(chosen, chosen[1:], strict=False):
            body.append(
                f"<line x1='{px(a[1]):.1f}' y1='{py(a[2]):.1f}' x2='{px(b[1]):.1f}' "
                f"y2='{py(b[2]):.1f}' stroke='{colour}' marker-end='url(#wb-arrow)'/>"
            )
        for index, (name, x, y, _) in enumerate(chosen):
            fill = colour if measured else "white"
            last = index == len(chosen) - 1
            body.append(
                f"<circle class='{'measured' if measured else 'analytic'}-point' "
                f"data-intensity='{x:.4g}' data-gflops='{y:.4g}' cx='{px(x):.1f}' "
                f"cy='{py(y):.1f}' r='{5 if last else 3}' fill='{fill}' "
                f"stroke='{colour}'><title>{html.escape(name)}: {y:.1f} GFLOP/s"
                "</title></circle>"
            )
    body.append(
        f"<text x='{width - 12}' y='{height - pad}' text-anchor='end' fill='#555'>"
        "○ analytic  ● measured</text>"
    )
    return _svg(width, height, body, "wb-roofline")


def analytic_point(func: PrimFunc, peaks) -> tuple[float, float]:
    """``(intensity, GFLOP/s)`` a schedule could reach at best, from the IR alone.

    Intensity is FLOPs over the minimum bytes; the compute roof is shared by the cores
    only when a loop is parallel, and by the vector lanes only when one is vectorized
    (8 float32 lanes assumed): ``min(roof * parallel share * vector share, intensity * GB/s)``.
    """
    import os

    from workbench.ir import analysis

    flops = analysis.flops(func)
    intensity = flops / max(analysis.min_bytes(func), 1)
    kinds = {n.kind.value for n in collect(func.body, lambda n: isinstance(n, For))}
    compute = peaks.gflops
    if "parallel" not in kinds:
        compute /= os.cpu_count() or 1
    if "vectorized" not in kinds:
        compute /= 8
    return intensity, min(compute, intensity * peaks.gbps)
