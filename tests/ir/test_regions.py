"""Block read/write region inference, including nested blocks."""

from workbench import from_source

NESTED = '''
@T.prim_func
def nested(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for io in T.serial(4):
        with T.block("outer"):
            vo = T.axis.spatial(4, io)
            for ii in T.serial(4):
                with T.block("inner"):
                    vi = T.axis.spatial(16, vo * 4 + ii)
                    B[vi] = A[vi] * T.float32(2)
'''


def test_nested_block_regions_are_relaxed_over_inner_loops():
    func = from_source(NESTED)
    outer = func.root_block.body.body.block
    inner = outer.body.body.block
    assert [str(r.buffer.name) for r in inner.reads] == ["A"]
    assert inner.reads[0].region[0].extent.value == 1
    # the outer block touches a window that depends on the inner loop: relaxed to all of A
    (read,) = outer.reads
    assert read.buffer.name == "A"
    assert (read.region[0].min.value, read.region[0].extent.value) == (0, 16)
    (write,) = outer.writes
    assert (write.region[0].min.value, write.region[0].extent.value) == (0, 16)


def test_stencil_window_merges_constant_offsets():
    func = from_source('''
@T.prim_func
def blur(A: T.Buffer((10,), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.serial(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] + A[vi + 1] + A[vi + 2]
''')
    block = func.root_block.body.body.block
    (read,) = block.reads
    assert read.region[0].min.name == "vi" and read.region[0].extent.value == 3
