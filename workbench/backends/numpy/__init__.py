"""The ``numpy`` target: the reference executor (whole numpy arrays where possible, Python
loops elsewhere) and its registration."""
