"""Parsing Python text from several threads at once (the explorer's background compile
beside the notebook's DSL parsing) never hits CPython 3.11's shared ast recursion counter."""

import gc
import pathlib
import re
import threading
import time

import workbench
from workbench.pyparse import parse

TEXT = "\n".join(f"def f{i}(a, b):\n    return [(a + b * {i}) for _ in range(3)]"
                 for i in range(200))


class _Finalized:
    def __del__(self):
        time.sleep(0)  # a finalizer run by a collection inside the parse lets threads switch


def _parse_with_garbage(rounds, failures):
    for _ in range(rounds):
        cycle = _Finalized()
        cycle.self = cycle
        del cycle
        try:
            tree = parse(TEXT)
        except SystemError as error:  # the CPython 3.11 race this module exists for
            failures.append(error)
        else:
            assert len(tree.body) == 200


def test_parses_from_four_threads_with_finalizers_all_succeed():
    threshold = gc.get_threshold()
    gc.set_threshold(50)
    try:
        failures = []
        threads = [threading.Thread(target=_parse_with_garbage, args=(30, failures))
                   for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        gc.set_threshold(*threshold)
    assert failures == []


def test_every_parse_in_workbench_goes_through_the_lock():
    root = pathlib.Path(workbench.__file__).parent
    bare = [f"{path.relative_to(root)}:{number}"
            for path in sorted(root.rglob("*.py")) if path.name != "pyparse.py"
            for number, line in enumerate(path.read_text().splitlines(), 1)
            if re.search(r"\bast\.parse\(", line)]
    assert bare == []
