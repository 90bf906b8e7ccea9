"""DSL functions the reduction tests work on, including ill-formed reductions that rfactor
refuses (small sizes: numba compiles are slow)."""

from workbench import T
from workbench.ir.stmt import IterKind
from workbench.schedule.tree import replace_block


def with_axis_kinds(func, block: str, kinds: str):
    """``func`` with the iter var kinds of ``block`` set to ``kinds`` (``"SR"``...) on the IR.

    The DSL refuses a reduce axis that indexes a store and a reduction axis declared
    spatial (issue 17), so the IR of the schedule layer's refusal tests (TVM's ports) is
    written valid and has its kinds swapped here: IR built another way (a frontend, by
    hand) must still be refused by the primitives."""

    def rewrite(node):
        iter_vars = tuple(
            iv.replace(kind=IterKind.SPATIAL if letter == "S" else IterKind.REDUCE)
            for iv, letter in zip(node.iter_vars, kinds, strict=True))
        return node.replace(iter_vars=iter_vars)

    return replace_block(func, block, rewrite)


@T.prim_func
def sum_minus(A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] - A[vi, vk]


@T.prim_func
def scaled_sum(A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] * T.float32(2) + A[vi, vk]


@T.prim_func
def sum_from_one(A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(1)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def row_min(A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32("inf")
            B[vi] = T.min(A[vi, vk], B[vi])


@T.prim_func
def row_prod(A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(1)
            B[vi] = B[vi] * A[vi, vk]


@T.prim_func
def two_outputs(
    A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")
):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
                C[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
            C[vi] = C[vi] + A[vi, vk] * A[vi, vk]


@T.prim_func
def shared_reduce_loop(
    A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32"), D: T.Buffer((8, 12), "float32")
):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
        with T.block("D"):
            vi, vk = T.axis.remap("SS", [i, k])
            D[vi, vk] = A[vi, vk] * T.float32(2)


@T.prim_func
def repeated_reduction(A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32")):
    for i, k, r in T.grid(8, 12, 2):  # noqa: B007 (r binds nothing on purpose)
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def scatter_sum(A: T.Buffer((8, 12), "float32"), B: T.Buffer((12,), "float32")):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("RS", [i, k])  # swapped to "SR" below
            with T.init():
                B[vk] = T.float32(0)
            B[vk] = B[vk] + A[vi, vk]


scatter_sum = with_axis_kinds(scatter_sum, "B", "SR")  # vk reduces yet indexes B


@T.prim_func
def shared_spatial_loop(
    A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8, 12), "float32")
):
    for i in T.serial(8):
        for k in T.serial(12):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
        for j in T.serial(12):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] - B[vi]


@T.prim_func
def outer_reduce_loop_shared(
    A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32"), D: T.Buffer((8, 3), "float32")
):
    for i, k_0 in T.grid(8, 3):
        for k_1 in T.serial(4):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                vk = T.axis.reduce(12, k_0 * 4 + k_1)
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
        with T.block("D"):
            vi, vk0 = T.axis.remap("SS", [i, k_0])
            D[vi, vk0] = A[vi, vk0 * 4]
