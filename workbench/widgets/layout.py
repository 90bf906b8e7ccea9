"""The explorer's widget tree: the header, the controls column, the tabs, diff and export.

Made once per explorer from the controls' column and the tune tab's widget; every view is a
``widgets.HTML`` whose ``value`` the explorer sets (so the state is saved in the notebook and
readable in tests), each with a ``wb-<name>`` class the browser test finds it by.
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as widgets

PANES = ("IR", "IR diff", "code", "loop nest", "access", "roofline", "lowering", "history", "tune")
LOWERING = ("DSL source", "scheduled IR", "generated source", "LLVM IR / PTX", "asm")
MACHINE_CODE = ("LLVM IR / PTX", "asm")
STATUS_VIEWS = ("header", "status", "error", "warnings", "node diff", "access map")
MESSAGE_HEIGHT = "84px"
"""The error and warning lines share a box of this height (scrolled when longer), so a
message appearing or going never moves the controls under the mouse."""
STYLE = (
    "<style>"
    ".wb-explorer .wb-tabs > .lm-TabBar .lm-TabBar-content {flex-wrap: wrap;}"
    ".wb-explorer .wb-tabs > .lm-TabBar .lm-TabBar-tab"
    " {flex: 0 0 auto !important; min-width: max-content !important; max-width: none;}"
    ".wb-explorer .wb-tabs > .lm-TabBar {min-height: fit-content; overflow: visible;}"
    "</style>"
)
"""The explorer's own CSS: its tab titles are never cut off, however narrow the page (the
file browser open): a tab keeps its title's width and the tabs wrap onto a second row
(ipywidgets shrinks them to 35 px otherwise)."""


SPINNER = (
    "<style>@keyframes wb-spin {to {transform: rotate(360deg);}}</style>"
    "<span class='wb-spinner' style='display: inline-block; width: 0.75em; height: 0.75em;"
    " margin-right: 0.35em; vertical-align: -0.1em; border: 2px solid #c8c8c8;"
    " border-top-color: #555; border-radius: 50%; animation: wb-spin 0.9s linear infinite'>"
    "</span>"
)
"""A busy mark drawn by CSS (a turning ring): no glyph, so it shows in every browser and on a
machine with no emoji font (headless Chromium drew the hourglass emoji as a box)."""


def pending(text: str, tag: str = "span") -> str:
    """HTML of a line saying work is under way: the spinner, then ``text`` (already HTML)."""
    return f"<{tag} class='wb-pending'>{SPINNER}{text}</{tag}>"


@dataclass
class Layout:
    """What the explorer keeps of its widget tree."""

    views: dict  # name -> HTML (and "lowering": name -> HTML, "export": Textarea)
    tabs: widgets.Tab
    lowering_tabs: widgets.Tab
    progress: widgets.IntProgress
    widget: widgets.VBox


def build_layout(controls: widgets.Widget, tune: widgets.Widget) -> Layout:
    """The whole explorer: ``controls`` on the left, the tabs (``tune`` last) on the right."""
    views: dict = {name: widgets.HTML() for name in PANES if name not in ("lowering", "tune")}
    for name in STATUS_VIEWS:
        views[name] = widgets.HTML()
    for name, view in views.items():
        view.add_class("wb-" + name.replace(" ", "-"))
    views["export"] = widgets.Textarea(layout=widgets.Layout(width="100%", height="160px"))
    lowering = {name: widgets.HTML() for name in LOWERING}
    views["lowering"] = lowering
    lowering_tabs = widgets.Tab(children=list(lowering.values()), titles=list(LOWERING))
    access = widgets.VBox([views["access"], views["access map"]])
    special = {"lowering": lowering_tabs, "tune": tune, "access": access}
    tabs = widgets.Tab(
        children=[special.get(name) or views[name] for name in PANES],
        titles=list(PANES),
        layout=widgets.Layout(flex="1"),
    )
    tabs.add_class("wb-tabs")
    progress = widgets.IntProgress(
        value=1, max=1, bar_style="info", layout=widgets.Layout(width="120px", visibility="hidden")
    )
    for name in ("header", "status"):  # one line each: a long status never pushes the page
        views[name].layout = widgets.Layout(height="1.8em", overflow="hidden")
    messages = widgets.VBox(  # fixed height: an error or a warning never moves the controls
        [views["error"], views["warnings"]],
        layout=widgets.Layout(height=MESSAGE_HEIGHT, overflow="auto", flex="0 0 auto"),
    )
    messages.add_class("wb-messages")
    tabs.layout.min_width = "520px"  # titles stay whole; the tabs wrap under the controls
    widget = widgets.VBox(
        [
            widgets.HTML(STYLE, layout=widgets.Layout(height="0px", margin="0px")),
            widgets.HBox([views["header"], progress, views["status"]]),
            messages,
            widgets.HBox([controls, tabs], layout=widgets.Layout(flex_flow="row wrap")),
            widgets.Accordion(
                children=[widgets.VBox([views["node diff"], views["export"]])],
                titles=["diff and export"],
            ),
        ]
    )
    widget.add_class("wb-explorer")
    return Layout(views, tabs, lowering_tabs, progress, widget)
