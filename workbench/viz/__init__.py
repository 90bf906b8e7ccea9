"""Visualisers: the roofline plot (``roofline``) and lowering-step tables (``steps``)."""
