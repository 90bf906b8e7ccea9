"""``MeasureResult``: one kernel's measured latency and where it sits on the roofline."""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from workbench.measure.peaks import MachinePeaks


def format_seconds(seconds: float) -> str:
    """A duration with a readable unit.

    Example
    -------
    >>> format_seconds(0.00123), format_seconds(4.5e-7), format_seconds(2.0)
    ('1.23 ms', '450 ns', '2.00 s')
    """
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    for unit, scale in (("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.0f} ns"


@dataclass(frozen=True)
class MeasureResult:
    """A kernel's measured latency, throughput and roofline position.

    Attributes
    ----------
    name, target : str
        The kernel (its PrimFunc's name, or the callable's) and its target
        (``"cpu"``, ``"numpy"``, ``"cuda"``; ``"python"`` for a plain callable).
    median_s, iqr_s : float
        Median latency and interquartile range (75th minus 25th percentile), seconds.
    repeats : int
        Number of timed calls; ``times_s`` holds each one's time, in call order.
    flops, bytes : int or None
        Work of one call: floating-point operations and the minimum bytes moved between
        memory and the chip (from the IR analysis, or given by the caller).
    peaks : MachinePeaks or None
        The machine's roofs the result is compared with.
    warmup, rotation_sets : int
        Untimed warm-up calls, and how many argument copies the timed calls cycled through.

    Derived: ``gflops``, ``gbps``, ``arithmetic_intensity`` (FLOP/byte), ``bound``
    (``"memory"`` or ``"compute"``), ``roof_gflops`` (the roofline at this intensity) and
    ``roofline_fraction`` (achieved / attainable).

    Example
    -------
    >>> r = MeasureResult("matmul", "cpu", median_s=1e-3, iqr_s=1e-5, repeats=3,
    ...                   times_s=(1e-3,) * 3, flops=2_000_000, bytes=400_000,
    ...                   peaks=MachinePeaks(gflops=100.0, gbps=10.0))
    >>> r.gflops, r.gbps, r.arithmetic_intensity, r.bound, r.roof_gflops, r.roofline_fraction
    (2.0, 0.4, 5.0, 'memory', 50.0, 0.04)
    """

    name: str
    target: str
    median_s: float
    iqr_s: float
    repeats: int
    times_s: tuple[float, ...] = field(repr=False)
    flops: int | None = None
    bytes: int | None = None
    peaks: MachinePeaks | None = field(default=None, repr=False)
    warmup: int = 0
    rotation_sets: int = 1

    # ------------------------------------------------------------ derived quantities

    @property
    def gflops(self) -> float | None:
        """Achieved GFLOP/s (10^9 floating-point operations per second)."""
        if not self.flops:
            return None
        return self.flops / self.median_s / 1e9

    @property
    def gbps(self) -> float | None:
        """Achieved GB/s (10^9 bytes per second), counting the minimum bytes moved."""
        if not self.bytes:
            return None
        return self.bytes / self.median_s / 1e9

    @property
    def arithmetic_intensity(self) -> float | None:
        """FLOPs per byte moved."""
        if not self.flops or not self.bytes:
            return None
        return self.flops / self.bytes

    @property
    def bound(self) -> str | None:
        """Which roof limits this kernel at its intensity: ``"memory"`` or ``"compute"``."""
        if self.peaks is None or (not self.flops and not self.bytes):
            return None
        if self.arithmetic_intensity is None:
            return "compute" if self.flops else "memory"
        return self.peaks.bound(self.arithmetic_intensity)

    @property
    def roof_gflops(self) -> float | None:
        """The attainable GFLOP/s at this intensity: ``min(peak, intensity * bandwidth)``."""
        if self.peaks is None or not self.flops:
            return None
        if self.arithmetic_intensity is None:
            return self.peaks.gflops
        return self.peaks.attainable_gflops(self.arithmetic_intensity)

    @property
    def roofline_fraction(self) -> float | None:
        """Achieved performance as a fraction of the roofline (1.0 is on the roof).

        For a kernel without FLOPs (a copy), the fraction of peak bandwidth.
        """
        if self.peaks is None:
            return None
        if self.flops:
            return self.gflops / self.roof_gflops
        if self.bytes:
            return self.gbps / self.peaks.gbps
        return None

    # ------------------------------------------------------------ views

    def to_dict(self) -> dict:
        """One flat record (no per-call times), as used by ``to_frame``."""
        return {
            "name": self.name,
            "target": self.target,
            "median_s": self.median_s,
            "iqr_s": self.iqr_s,
            "repeats": self.repeats,
            "flops": self.flops,
            "bytes": self.bytes,
            "gflops": self.gflops,
            "gbps": self.gbps,
            "arithmetic_intensity": self.arithmetic_intensity,
            "bound": self.bound,
            "roof_gflops": self.roof_gflops,
            "roofline_fraction": self.roofline_fraction,
            "rotation_sets": self.rotation_sets,
        }

    def to_frame(self):
        """A one-row ``pandas.DataFrame``; ``pd.concat`` several to compare kernels.

        Example
        -------
        >>> import pandas as pd
        >>> pd.concat([r1.to_frame(), r2.to_frame()])   # doctest: +SKIP
        """
        import pandas as pd

        return pd.DataFrame([self.to_dict()])

    def _summary_rows(self) -> list[tuple[str, str]]:
        rows = [
            ("median", format_seconds(self.median_s)),
            ("IQR", format_seconds(self.iqr_s)),
            (
                "runs",
                f"{self.repeats} (after {self.warmup} warm-up, "
                f"{self.rotation_sets} rotated input sets)",
            ),
        ]
        if self.gflops is not None:
            rows.append(("GFLOP/s", f"{self.gflops:.2f}"))
        if self.gbps is not None:
            rows.append(("GB/s", f"{self.gbps:.2f}"))
        if self.arithmetic_intensity is not None:
            rows.append(("intensity", f"{self.arithmetic_intensity:.2f} FLOP/byte"))
        if self.roofline_fraction is not None:
            rows.append(("roofline", f"{self.bound}-bound, {self.roofline_fraction:.1%} of roof"))
        return rows

    def __str__(self) -> str:
        parts = [f"{label} {value}" for label, value in self._summary_rows()]
        return f"{self.name} [{self.target}]: " + ", ".join(parts)

    def _repr_html_(self) -> str:
        title = f"{html.escape(self.name)} <small>[{html.escape(self.target)}]</small>"
        cells = "".join(
            f"<tr><th style='text-align:left'>{html.escape(label)}</th>"
            f"<td style='text-align:left'>{html.escape(value)}</td></tr>"
            for label, value in self._summary_rows()
        )
        return f"<div class='wb-measure'><b>{title}</b><table>{cells}</table></div>"
