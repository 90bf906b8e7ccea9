"""The ``cuda`` target (Numba ``cuda.jit``): its registration, passes (barriers, reductions,
vector loads, double buffering...), printer, launcher, device runtime and verifier."""
