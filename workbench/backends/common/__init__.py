"""What every target shares: the target registry (``target``), ``build``, the common
lowering, ``Kernel``, the kernel cache, the Python printers and the passes no target owns."""
