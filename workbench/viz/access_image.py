"""Access maps as small images: which elements of each buffer one tile touches, and when.

``access_images`` draws, for every buffer a block touches, the ``access_map`` of one
iteration of a loop (``tile``) as a PNG embedded in HTML: elements never touched are light
grey, touched ones coloured from dark (first) to yellow (last) by the iteration that touches
them first, the triton-viz picture of tiling. Large buffers are reduced to at most
``max_side`` pixels a side (a pixel is touched when any element under it is, coloured by the
earliest), so a one-row stripe stays visible. No Matplotlib: a figure costs ~1 s here, an
image a few milliseconds.

Example
-------
>>> import workbench as wb
>>> sch = wb.Schedule(wb.ops.matmul(8, 8, 8))
>>> i, j, k = sch.get_loops(sch.get_block("C"))
>>> view = access_images(sch, block="C", tile="i")
>>> print(view)
A 8x8: 8 of 64 elements touched by one iteration of i
B 8x8: 64 of 64 elements touched by one iteration of i
C 8x8: 8 of 64 elements touched by one iteration of i
"""

from __future__ import annotations

import base64
import html
import struct
import zlib
from dataclasses import dataclass

import numpy as np

from workbench.viz.html import ShowsHtml

UNTOUCHED = (238, 238, 238)
# three stops of viridis: first touched, middle, last
STOPS = np.array([(68, 1, 84), (33, 145, 140), (253, 231, 37)], dtype=np.float64)


@dataclass(frozen=True, repr=False)
class AccessImages(ShowsHtml):
    """HTML (one image per buffer) and the same facts as text; ``touched`` counts elements."""

    html: str
    text: str
    touched: dict[str, int]


def png_bytes(rgb: np.ndarray) -> bytes:
    """An ``(h, w, 3)`` uint8 array as PNG file bytes (8-bit RGB, no filter)."""
    height, width, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[row].tobytes() for row in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 6))
        + chunk(b"IEND", b"")
    )


def reduce_map(values: np.ndarray, max_side: int) -> np.ndarray:
    """A 2-D first-touch map shrunk to at most ``max_side`` a side: each cell the earliest
    touch under it (``-1`` when none is touched)."""
    rows, cols = values.shape
    fr, fc = -(-rows // max_side), -(-cols // max_side)
    if fr == 1 and fc == 1:
        return values
    padded = np.full((-(-rows // fr) * fr, -(-cols // fc) * fc), -1, dtype=np.int64)
    padded[:rows, :cols] = values
    big = np.iinfo(np.int64).max
    cells = np.where(padded < 0, big, padded).reshape(padded.shape[0] // fr, fr, -1, fc)
    earliest = cells.min(axis=(1, 3))
    return np.where(earliest == big, -1, earliest)


def colour(values: np.ndarray) -> np.ndarray:
    """First-touch numbers to RGB: grey for ``-1``, dark to yellow by rank of the touch."""
    touched = values >= 0
    out = np.empty(values.shape + (3,), dtype=np.uint8)
    out[...] = UNTOUCHED
    if touched.any():
        order = values[touched].astype(np.float64)
        span = order.max() - order.min()
        t = (order - order.min()) / span if span else np.zeros_like(order)
        scaled = t * (len(STOPS) - 1)
        low = np.minimum(scaled.astype(int), len(STOPS) - 2)
        frac = (scaled - low)[:, None]
        out[touched] = np.rint(STOPS[low] * (1 - frac) + STOPS[low + 1] * frac).astype(np.uint8)
    return out


def zoom_box(values: np.ndarray, fraction: float = 0.25,
             pad: int = 2) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """Rows and columns ``((r0, r1), (c0, c1))`` around the touched elements (``pad`` more
    on each side), when they cover less than ``fraction`` of the map; else None."""
    rows = np.flatnonzero((values >= 0).any(axis=1))
    cols = np.flatnonzero((values >= 0).any(axis=0))
    if rows.size == 0:
        return None
    r0, r1 = max(rows[0] - pad, 0), min(rows[-1] + 1 + pad, values.shape[0])
    c0, c1 = max(cols[0] - pad, 0), min(cols[-1] + 1 + pad, values.shape[1])
    if (r1 - r0) * (c1 - c0) >= fraction * values.size:
        return None
    return (int(r0), int(r1)), (int(c0), int(c1))


def _figure(values: np.ndarray, max_side: int, px: int, caption: str, attrs: str) -> str:
    image = colour(reduce_map(values, max_side))
    data = base64.b64encode(png_bytes(image)).decode()
    rows, cols = image.shape[:2]  # fit in a px x px box, each side at least 8 px
    width = max(8, round(px * cols / max(rows, cols)))
    height = max(8, round(px * rows / max(rows, cols)))
    return (
        "<figure style='display:inline-block;margin:4px 10px 4px 0;vertical-align:top'>"
        f"<img {attrs} src='data:image/png;base64,{data}' width='{width}' height='{height}' "
        "style='image-rendering:pixelated;border:1px solid #ccc'/>"
        f"<figcaption style='font-size:11px'>{html.escape(caption)}</figcaption></figure>"
    )


def _as_2d(values: np.ndarray) -> np.ndarray:
    if values.ndim == 1:
        return values[None, :]
    if values.ndim == 2:
        return values
    return values.reshape(-1, values.shape[-1])  # leading axes stacked as rows


def access_images(obj, *, block: str, tile: str, max_side: int = 128,
                  px: int = 160) -> AccessImages:
    """One image per buffer ``block`` touches: the elements one iteration of ``tile`` touches.

    Parameters
    ----------
    obj : PrimFunc or Schedule
    block : str
        The block whose accesses are drawn.
    tile : str
        A loop around ``block``: it and the loops around it are pinned (to 0), so the image
        shows one iteration of its body, coloured by the order of first touch.
    max_side : int
        Largest image side in pixels before the map is reduced.
    px : int
        Displayed width of each image (CSS pixels, drawn without smoothing).
    """
    from workbench.viz.access import access_map, all_buffers
    from workbench.viz.html import _function_of
    from workbench.viz.iteration import block_accesses, block_paths

    func = _function_of(obj)
    paths = [p for p in block_paths(func) if p.block.name == block]
    if not paths:
        raise KeyError(f"{func.name} has no block {block!r}")
    used = [b for b in all_buffers(func) if block_accesses(paths[0].block, b)]
    figures, lines, touched = [], [], {}
    for buf in used:
        values = np.asarray(access_map(func, buf, block=block, tile=tile))
        count = int((values >= 0).sum())
        touched[buf.name] = count
        shape = "x".join(str(int(n)) for n in buf.shape)
        lines.append(
            f"{buf.name} {shape}: {count} of {values.size} elements touched by one "
            f"iteration of {tile}"
        )
        flat = _as_2d(values)
        figures.append(
            _figure(flat, max_side, px, f"{buf.name} {shape}: {count} touched",
                    f"class='wb-access-image' data-buffer='{html.escape(buf.name)}' "
                    f"data-touched='{count}'")
        )
        box = zoom_box(flat)
        if box is not None:  # a small tile in a large buffer: show it close up too
            (r0, r1), (c0, c1) = box
            figures.append(
                _figure(flat[r0:r1, c0:c1], max_side, px,
                        f"{buf.name}[{r0}:{r1}, {c0}:{c1}] (zoom)",
                        f"class='wb-access-zoom' data-buffer='{html.escape(buf.name)}'")
            )
    legend = (
        "<div style='font-size:11px;color:#555'>one iteration of "
        f"<code>{html.escape(tile)}</code>: grey never touched, dark → yellow first → last "
        "touched</div>"
    )
    return AccessImages(legend + "".join(figures), "\n".join(lines), touched)
