"""docs/ops.md is the generated operator table, and every registered op is tested."""

from __future__ import annotations

import pytest

from workbench.graph.op_table import DOC, op_table


def test_committed_op_table_is_the_generated_one():
    assert DOC.read_text() == op_table(), "run: python -m workbench.graph.op_table"


def test_every_supported_aten_op_is_in_the_table_and_has_a_test():
    pytest.importorskip("torch")
    from test_aten_ops import CASES

    from workbench.graph.frontends.torch_aten import supported_ops

    text = op_table()
    for name in supported_ops():
        assert f"| `aten.{name}` |" in text
        assert name in CASES


def test_every_graph_operator_is_lowered():
    from workbench.graph.lower_ops import COMPOSED_HEADS, LIBRARY_HEADS
    from workbench.graph.ops import OPS, kind

    for name in OPS:
        assert (kind(name) == "elementwise" or name in LIBRARY_HEADS or name in COMPOSED_HEADS
                or name == "reshape"), name


def test_the_writer_refuses_an_option_instead_of_writing_a_file_of_that_name(tmp_path,
                                                                            monkeypatch,
                                                                            capsys):
    from workbench.graph.op_table import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as raised:
        main(["--bogus"])
    assert raised.value.code == 2 and "unrecognized arguments: --bogus" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    assert main([str(tmp_path / "ops.md")]) == 0
    assert (tmp_path / "ops.md").read_text() == op_table()
