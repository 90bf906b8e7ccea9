"""Block read/write region inference, including nested blocks."""

from workbench import from_source
from workbench.ir.regions import block_access_regions

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


LOCAL = '''
@T.prim_func
def local(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for io in T.serial(4):
        with T.block("outer"):
            vo = T.axis.spatial(4, io)
            T_own = T.alloc_buffer((4,), "float32")
            for ii in T.serial(4):
                with T.block("stage"):
                    vi = T.axis.spatial(4, ii)
                    T_own[vi] = A[vo * 4 + vi]
            for ii in T.serial(4):
                with T.block("inner"):
                    vi = T.axis.spatial(4, ii)
                    T_inner = T.alloc_buffer((1,), "float32")
                    T_inner[0] = T_own[vi] * T.float32(2)
                    B[vo * 4 + vi] = T_inner[0]
'''


def test_regions_never_name_a_buffer_the_block_or_a_block_inside_allocates():
    func = from_source(LOCAL)
    outer = func.root_block.body.body.block
    own = outer.alloc_buffers[0]
    inner = outer.body.stmts[1].body.block
    inner_buffer = inner.alloc_buffers[0]
    # the parser infers the regions through block_access_regions: own and inner buffers left out
    assert [r.buffer.name for r in outer.reads] == ["A"]
    assert [w.buffer.name for w in outer.writes] == ["B"]
    assert [r.buffer.name for r in inner.reads] == ["T_own"]
    assert [w.buffer.name for w in inner.writes] == ["B"]
    # called directly: without the block's own allocations they are named, with them not
    reads, writes = block_access_regions(outer.body, None)
    assert [r.buffer.name for r in reads] == ["A", "T_own"]
    assert inner_buffer not in {w.buffer for w in writes}
    reads, writes = block_access_regions(outer.body, None, outer.alloc_buffers)
    assert own not in {r.buffer for r in reads} | {w.buffer for w in writes}
    assert [r.buffer.name for r in reads] == ["A"]
    assert [w.buffer.name for w in writes] == ["B"]
