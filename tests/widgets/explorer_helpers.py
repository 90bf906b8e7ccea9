"""What the explorer tests share: fixed machine peaks, so no test measures the machine (the
``ex`` fixture, an explorer on a 64x64x64 matmul, is in ``conftest.py``)."""

from workbench.measure import MachinePeaks

PEAKS = MachinePeaks(gflops=200.0, gbps=20.0)
