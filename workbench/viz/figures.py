"""Figures that pyplot does not track.

A figure made by ``plt.subplots`` stays registered with pyplot until closed: a notebook's
inline backend shows it at the end of the cell (and again if the cell returns it), and an
explorer redrawing at every change accumulates them ("More than 20 figures have been
opened"). The visualizers that return a ``Figure`` make it with ``new_figure``: an Agg
canvas, no pyplot registry; Jupyter displays it once, when it is returned or passed to
``display``.
"""

from __future__ import annotations


def new_figure(figsize: tuple[float, float], **subplots):
    """A ``(Figure, axes)`` pair like ``plt.subplots(**subplots)``, outside pyplot.

    Example
    -------
    >>> fig, ax = new_figure((4, 3))
    >>> type(fig.canvas).__name__, ax.figure is fig
    ('FigureCanvasAgg', True)
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    axes = fig.subplots(**subplots)
    return fig, axes
