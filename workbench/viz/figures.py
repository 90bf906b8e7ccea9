"""Figures that pyplot does not track.

A figure made by ``plt.subplots`` stays registered with pyplot until closed: a notebook's
inline backend shows it at the end of the cell (and again if the cell returns it), and an
explorer redrawing at every change accumulates them ("More than 20 figures have been
opened"). The visualizers that return a ``Figure`` make it with ``new_figure``: an Agg
canvas, no pyplot registry; Jupyter displays it once, when it is returned or passed to
``display``.
"""

from __future__ import annotations

_ACTIVATED = []


def _activate_backend() -> None:
    """Load pyplot's backend once: in Jupyter that is the inline backend, which registers
    the display formatter that shows a returned Figure (pyplot loads it lazily, at its
    first figure, which figures made here never are)."""
    if _ACTIVATED:
        return
    import matplotlib.pyplot as plt

    get_backend_mod = getattr(plt, "_get_backend_mod", None)
    if get_backend_mod is not None:
        get_backend_mod()
    else:  # pragma: no cover - older matplotlib: a throwaway figure loads it
        plt.close(plt.figure())
    _ACTIVATED.append(True)


def new_figure(figsize: tuple[float, float], **subplots):
    """A ``(Figure, axes)`` pair like ``plt.subplots(**subplots)``, outside pyplot.

    Example
    -------
    >>> fig, ax = new_figure((4, 3))
    >>> type(fig.canvas).__name__, ax.figure is fig
    ('FigureCanvasAgg', True)
    """
    _activate_backend()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    axes = fig.subplots(**subplots)
    return fig, axes
