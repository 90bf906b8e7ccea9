"""The ``cpu`` target (Numba ``njit``): its registration, passes, printer, compile step,
kernel class, the host CPU's facts and the runtime its kernels call."""
