"""A PyTorch model compiled for the CPU, checked against PyTorch, timed per kernel, saved and
loaded again: the README's "A model" section.

Run: ``.venv/bin/python examples/compile_model.py`` (about 10 s: one Numba compile per kernel).
"""

import tempfile

import numpy as np
import torch

import workbench as wb

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
    torch.nn.Conv2d(16, 16, 3, padding=1, groups=16), torch.nn.GELU(),
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10),
).eval()
x = torch.randn(2, 3, 30, 30)

compiled = wb.compile(model, (x,))  # torch.export -> graph IR -> passes, fusion -> Numba
print(compiled)
with torch.no_grad():
    expected = model(x).numpy()
out = compiled(x)  # numpy out (torch tensors and numpy arrays in)
print(f"max abs error vs torch: {np.abs(out - expected).max():.1e}")
print(compiled.latency_report(x, repeat=5)[["kernel", "pattern"]].to_string(index=False))

with tempfile.TemporaryDirectory() as folder:
    compiled.save(folder)  # manifest with every file's sha256; kernels regenerated on load
    again = wb.load(folder)
    print(f"reloaded model equals the compiled one: {np.array_equal(again(x), out)}")
