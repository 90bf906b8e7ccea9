"""A compiled model's output nesting: read from ``torch.export``'s output spec, the model not
run again; the spec's answer equals running the model's (``output_structure``)."""

import collections

import pytest
import torch

import workbench as wb
from workbench.graph.compiler import _import, output_structure, structure_from_spec

Named = collections.namedtuple("Named", "first second")


class Outputs(torch.nn.Module):
    def __init__(self, kind: str):
        super().__init__()
        self.kind, self.calls = kind, 0

    def forward(self, x):
        if not (torch.compiler.is_exporting() or torch.compiler.is_compiling()):
            self.calls += 1  # eager calls only
        y, z = x * 2, torch.relu(x)
        return {
            "one": lambda: y,
            "pair": lambda: (y, z),
            "nested": lambda: ((y, [z, y + 1]), {"b": z * 3, "a": y - 1}),
            "named": lambda: Named(y, z),
            "with_none": lambda: (y, None),
        }[self.kind]()


@pytest.mark.parametrize("kind", ["one", "pair", "nested", "named", "with_none"])
def test_the_spec_gives_what_running_the_model_gives(kind):
    model, x = Outputs(kind).eval(), torch.randn(2, 3)
    graph, spec = _import(model, (x,))
    from_spec = structure_from_spec(spec, len(graph.outputs))
    ran = output_structure(model, (x,), len(graph.outputs))
    if kind in ("named", "with_none"):  # left to running the model
        assert from_spec is None
    else:
        assert from_spec == ran


def test_compile_does_not_run_the_model_again_when_the_spec_answers():
    model, x = Outputs("nested").eval(), torch.randn(2, 3)
    compiled = wb.compile(model, (x,), schedules="none")
    assert model.calls == 0  # traced by torch.export, never run eagerly
    out, want = compiled(x), model(x)
    assert isinstance(out, tuple) and isinstance(out[0][1], list) and list(out[1]) == ["b", "a"]
    torch.testing.assert_close(torch.as_tensor(out[1]["a"]), want[1]["a"])
