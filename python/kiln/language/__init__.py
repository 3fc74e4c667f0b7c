"""The kiln language: ``import kiln.language as kl``.

Builtins are thin: each checks nothing itself and forwards to the semantic
layer (``kiln.compiler.semantic.Semantic``), which owns type checks, promotion,
broadcasting and user-facing errors. They can only be called inside
``@kiln.jit`` functions.
"""

from __future__ import annotations

from typing import Any

from .core import (
    ALL_DTYPES,
    _shape_args,
    _shape_tuple,
    _unwrap,
    bfloat16,
    block_type,
    builtin,
    constexpr,
    dtype,
    dtype_from_str,
    float8e4m3,
    float8e5m2,
    float16,
    float32,
    float64,
    int1,
    int8,
    int16,
    int32,
    int64,
    pointer_type,
    tensor,
    tensor_descriptor_type,
    uint8,
    uint16,
    uint32,
    uint64,
)


@builtin
def program_id(axis: Any, _semantic: Any = None) -> tensor:
    """Index of this program along grid axis 0, 1 or 2 (int32)."""
    return _semantic.program_id(_unwrap(axis))


@builtin
def num_programs(axis: Any, _semantic: Any = None) -> tensor:
    """Number of programs along grid axis 0, 1 or 2 (int32)."""
    return _semantic.num_programs(_unwrap(axis))


@builtin
def arange(start: Any, end: Any, _semantic: Any = None) -> tensor:
    """int32 tile ``[start, end)``; constexpr bounds, ``end - start`` a power of two."""
    return _semantic.arange(start, end)


@builtin
def trans(input: Any, *dims: Any, _semantic: Any = None) -> tensor:
    """Permutes the dimensions of a tile: without ``dims`` the transpose of a 2-D tile
    (``x.T``); ``trans(x, 2, 0, 1)`` or ``trans(x, (2, 0, 1))`` as ``permute``."""
    return _semantic.trans(input, dims)


@builtin
def permute(input: Any, *dims: Any, _semantic: Any = None) -> tensor:
    """Dimension ``k`` of the result is dimension ``dims[k]`` of ``input``; ``dims`` (a tuple,
    or separate ints) is a permutation of the dimensions, negative entries counting from the
    end. Elements move between threads through shared memory."""
    return _semantic.permute(input, dims)


@builtin
def reshape(input: Any, *shape: Any, can_reorder: Any = False, _semantic: Any = None) -> tensor:
    """The elements of ``input`` in row-major order, in ``shape`` (a tuple or separate
    constexpr ints, powers of two, the same number of elements); moves no data.
    ``can_reorder`` is accepted for Triton compatibility: the order is always kept."""
    return _semantic.reshape(input, _shape_args("reshape", shape))


@builtin
def join(a: Any, b: Any, _semantic: Any = None) -> tensor:
    """A tile with a new minor dimension of 2: ``result[..., 0] = a``, ``result[..., 1] = b``
    (``a`` and ``b`` broadcast to one shape and have one dtype)."""
    return _semantic.join(a, b)


@builtin
def split(a: Any, _semantic: Any = None) -> Any:
    """The two halves ``(a[..., 0], a[..., 1])`` of a tile whose last dimension is 2 (the
    inverse of ``join``)."""
    return _semantic.split(a)


@builtin
def load(pointer: Any, mask: Any = None, other: Any = None, sem: Any = None, scope: Any = None,
         cache_modifier: Any = "", eviction_policy: Any = "", _semantic: Any = None) -> tensor:
    """Loads from a pointer (tile); where ``mask`` is false the result is ``other``. With
    ``sem`` ("relaxed" or "acquire") and ``scope`` ("cta", "gpu", "sys") each element is one
    ordered load (``ld.acquire.gpu``): the thread's later accesses happen after it.
    ``cache_modifier`` (".ca", ".cg", ".cv") and ``eviction_policy`` ("evict_normal",
    "evict_first", "evict_last") are Triton's cache hints (plain loads only): the load
    becomes ``ld.global.cg`` / ``.L1::evict_first.L2::cache_hint`` with an L2 policy."""
    return _semantic.load(pointer, mask, other, _unwrap(sem), _unwrap(scope),
                          _unwrap(cache_modifier), _unwrap(eviction_policy))


@builtin
def bulk_load(pointer: Any, size: Any, count: Any = None, _semantic: Any = None) -> tensor:
    """The ``size`` elements ``pointer[0], ..., pointer[size - 1]`` as a 1-D tile, copied
    global -> shared memory by one ``cp.async.bulk`` (no tensor descriptor), completed on an
    mbarrier and read into registers. ``pointer`` is a scalar pointer that must be 16-byte
    aligned (proved from the kernel's divisibility specialization, else a compile error);
    ``size`` is a constexpr power of two spanning a multiple of 16 bytes (below 1 MiB). No
    mask: every element read must be in bounds. Call it in uniform control flow (every
    thread of the program reaches it).

    ``count`` (an int or a runtime integer scalar in [0, size]) copies only the first
    ``count`` elements; the lanes ``>= count`` read as zero (a row of a length that is not a
    power of two, e.g. 7168, in a tile of 8192). ``count`` elements must span whole 16-byte
    units (a multiple of 8 for bf16): an int is checked at once, a runtime value must be
    proved by the compiler (a constexpr, or an argument specialized as divisible by 16).

    In ``for j in kl.range(lo, hi, num_stages=N)`` a bulk_load whose pointer and count are
    pure functions of ``j`` (and of values from outside the loop) is pipelined: an N-slot
    ring in shared memory keeps the loads of iterations j+1 .. j+N-1 in flight while j is
    consumed, so only the row being consumed lives in registers."""
    return _semantic.bulk_load(pointer, size, count)


@builtin
def min_programs_per_sm(programs: Any, _semantic: Any = None) -> None:
    """Compile the kernel so that ``programs`` (a constexpr int in [1, 32]) of its programs
    fit on one SM at once: PTX ``.minnctapersm``, under which ptxas keeps the registers a
    thread within 65536 / (programs x threads per program), spilling if it must (check
    ``meta["targets"][arch]["spill_store_bytes"]``). A hint for latency-bound persistent
    kernels whose registers would otherwise leave room for one program an SM; shared memory
    must fit as well (the launch does not check). Call it anywhere in the kernel body."""
    return _semantic.min_programs_per_sm(programs)


@builtin
def store(pointer: Any, value: Any, mask: Any = None, sem: Any = None, scope: Any = None,
          cache_modifier: Any = "", eviction_policy: Any = "", _semantic: Any = None) -> None:
    """Stores ``value`` (cast to the pointee type) where ``mask`` is true. With ``sem``
    ("relaxed" or "release") and ``scope`` each element is one ordered store
    (``st.release.sys``): the thread's earlier accesses happen before it.
    ``cache_modifier`` (".wb", ".cg", ".cs", ".wt") and ``eviction_policy`` as for
    ``load`` (plain stores only)."""
    return _semantic.store(pointer, value, mask, _unwrap(sem), _unwrap(scope),
                           _unwrap(cache_modifier), _unwrap(eviction_policy))


@builtin
def peer_pointer(peer_table: Any, rank: Any, dtype: Any, _semantic: Any = None) -> tensor:
    """The base of rank ``rank``'s symmetric workspace, as a scalar pointer to ``dtype``.

    ``peer_table`` is a symmetric buffer's peer table (``kiln.distributed.SymmetricBuffer``
    passes it as a pointer to int64: entry r is rank r's workspace as mapped in this process,
    over CUDA IPC), ``rank`` a scalar integer. The bases are 16-byte aligned, so accesses
    through the pointer vectorize. The interpreter has no peers: it reports the call."""
    return _semantic.peer_pointer(peer_table, rank, _unwrap(dtype))


@builtin
def poll_nonzero(pointer: Any, mask: Any = None, scope: Any = "sys",
                 timeout_ns: Any = 1_000_000_000, _semantic: Any = None) -> tensor:
    """Loads each element with ``ld.relaxed.<scope>`` again and again, backing off with a
    ``nanosleep`` from 32 to 1024 ns, until it is non-zero; after ``timeout_ns`` (a constexpr
    int, default one second) an element still zero is returned as zero, so the caller sees
    the timeout. Where ``mask`` is false nothing is read (the result is zero). The consumer
    side of a protocol whose producers never store zero: a collective's Lamport empty
    markers, where a slot of zeros is empty and data words are stored non-zero."""
    return _semantic.poll_nonzero(pointer, mask, _unwrap(scope), _unwrap(timeout_ns))


@builtin
def nonzero_marker(x: Any, _semantic: Any = None) -> tensor:
    """``x`` (32-bit integer words: bf16 pairs viewed as int32) with every zero word replaced
    by ``0x8000`` -- a -0.0 in the low bf16, which adds nothing to a sum -- so that a stored
    word is never the all-zero "empty" of a Lamport slot: the producer side of
    ``poll_nonzero``."""
    return _semantic.nonzero_marker(x)


@builtin
def fence(sem: Any = "acq_rel", scope: Any = "gpu", _semantic: Any = None) -> None:
    """A memory fence (``fence.acq_rel.<scope>``): orders this thread's accesses before it
    with those after it, for the threads of ``scope`` ("cta", "gpu", "sys")."""
    return _semantic.fence(_unwrap(sem), _unwrap(scope))


@builtin
def fence_proxy_async(space: Any = "global", _semantic: Any = None) -> None:
    """``fence.proxy.async.<space>`` ("global", "shared_cta", or "all" spaces): this thread's
    generic-proxy accesses before it (plain and ordered loads and stores) are ordered with
    async-proxy accesses after it (TMA and bulk copies). Where a TMA load reads global memory
    that plain stores wrote -- a peer's pushes, once acquired -- put it between the acquire
    and the load."""
    return _semantic.fence_proxy_async(_unwrap(space))


@builtin
def full(shape: Any, value: Any, dtype: Any, _semantic: Any = None) -> tensor:
    """A tile of ``shape`` filled with ``value`` of ``dtype``."""
    return _semantic.full(_shape_tuple(shape), value, _unwrap(dtype))


@builtin
def zeros(shape: Any, dtype: Any, _semantic: Any = None) -> tensor:
    """A tile of ``shape`` filled with zeros of ``dtype``."""
    return _semantic.full(_shape_tuple(shape), 0, _unwrap(dtype))


@builtin
def where(condition: Any, x: Any, y: Any, _semantic: Any = None) -> tensor:
    """Elementwise ``x if condition else y`` with broadcasting and promotion."""
    return _semantic.where(condition, x, y)


def _math_unary(name: str, doc: str):
    def fn(x: Any, precise: bool = False, _semantic: Any = None) -> tensor:
        return _semantic.math_unary(name, x, precise=bool(_unwrap(precise)))

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = doc
    return builtin(fn)


# exp, exp2, log, log2, sin, cos and tanh use the GPU's approximate hardware paths
# (ex2/lg2/sin/cos/tanh.approx.f32, as CUDA's fast intrinsics and Triton's tl.exp);
# ``precise=True`` asks for libdevice's accurate versions instead.
exp = _math_unary("exp", "e**x (float; f16/bf16 computed in f32); approximate unless precise.")
exp2 = _math_unary("exp2", "2**x; approximate unless precise.")
log = _math_unary("log", "Natural logarithm; approximate unless precise.")
log2 = _math_unary("log2", "Base-2 logarithm; approximate unless precise.")
tanh = _math_unary("tanh", "Hyperbolic tangent (tanh.approx.f32: max rel. error 2^-10.7) "
                           "unless precise.")
sqrt = _math_unary("sqrt", "Square root.")
rsqrt = _math_unary("rsqrt", "1/sqrt(x).")
sin = _math_unary("sin", "Sine; approximate unless precise.")
cos = _math_unary("cos", "Cosine; approximate unless precise.")
erf = _math_unary("erf", "Error function.")
floor = _math_unary("floor", "Round toward -inf.")
ceil = _math_unary("ceil", "Round toward +inf.")


@builtin
def sum(x: Any, axis: Any = None, _semantic: Any = None) -> tensor:  # noqa: A001
    """Sum along ``axis`` (all axes for None). f16/bf16 accumulate in f32, narrow ints
    in i32; the result has the accumulation type."""
    return _semantic.reduce(x, _unwrap(axis), "sum")


@builtin
def max(x: Any, axis: Any = None, _semantic: Any = None) -> tensor:  # noqa: A001
    """Maximum along ``axis`` (all axes for None); NaN is ignored (maxnum)."""
    return _semantic.reduce(x, _unwrap(axis), "max")


@builtin
def min(x: Any, axis: Any = None, _semantic: Any = None) -> tensor:  # noqa: A001
    """Minimum along ``axis`` (all axes for None); NaN is ignored (minnum)."""
    return _semantic.reduce(x, _unwrap(axis), "min")


@builtin
def argmax(x: Any, axis: Any = None, _semantic: Any = None) -> tensor:
    """int32 index of the maximum along ``axis``; ties go to the lowest index."""
    return _semantic.argreduce(x, _unwrap(axis), "max")


@builtin
def argmin(x: Any, axis: Any = None, _semantic: Any = None) -> tensor:
    """int32 index of the minimum along ``axis``; ties go to the lowest index."""
    return _semantic.argreduce(x, _unwrap(axis), "min")


@builtin
def reduce(input: Any, axis: Any, combine_fn: Any, _semantic: Any = None) -> Any:
    """Reduction along ``axis`` (all axes for None) with a user ``combine_fn``.

    ``input`` is a tile or a tuple of N tiles of one shape (their dtypes may differ),
    reduced together in one pass. ``combine_fn`` is a ``@kiln.jit`` function of 2N
    scalars, the N accumulated values and then the N new ones, returning a tuple of N
    (one value for N = 1); it must be associative and commutative (the order of the
    combinations is unspecified). Returns a tile for a tile and a tuple for a tuple::

        @kiln.jit
        def add_pair(a0, b0, a1, b1):
            return a0 + a1, b0 + b1

        ss, sw = kl.reduce((x * x, x * w), 1, add_pair)
    """
    return _semantic.reduce_combine(_unwrap(input), _unwrap(axis), _unwrap(combine_fn))


@builtin
def cumsum(x: Any, axis: Any = 0, _semantic: Any = None) -> tensor:
    """Inclusive prefix sum along ``axis``. f16/bf16 accumulate in f32, narrow ints
    in i32 (as ``sum``); the result has the accumulation type."""
    return _semantic.scan(x, _unwrap(axis), "sum")


@builtin
def cumprod(x: Any, axis: Any = 0, _semantic: Any = None) -> tensor:
    """Inclusive prefix product along ``axis``, in the tile's dtype."""
    return _semantic.scan(x, _unwrap(axis), "prod")


@builtin
def associative_scan(x: Any, axis: Any, combine_fn: Any, _semantic: Any = None) -> tensor:
    """Inclusive scan along ``axis``: element ``i`` of a line is
    ``combine_fn(...combine_fn(x[0], x[1])..., x[i])``. ``combine_fn`` is a ``@kiln.jit``
    function of two scalars of the tile's dtype (the earlier partial first) returning one;
    it must be associative (the grouping is unspecified), not necessarily commutative."""
    return _semantic.associative_scan(x, _unwrap(axis), _unwrap(combine_fn))


def _atomic(op: str, doc: str):
    def fn(pointer: Any, val: Any, mask: Any = None, sem: Any = "acq_rel", scope: Any = "gpu",
           _semantic: Any = None) -> tensor:
        return _semantic.atomic_rmw(op, pointer, val, mask, _unwrap(sem), _unwrap(scope))

    fn.__name__ = fn.__qualname__ = f"atomic_{op}"
    fn.__doc__ = doc + (" Returns the old values. ``sem``: relaxed, acquire, release, "
                        "acq_rel (default); ``scope``: cta, gpu (default), sys. Masked-off "
                        "elements are not touched and return 0.")
    return builtin(fn)


atomic_add = _atomic("add", "Atomic ``*p += val`` (integers; f16/bf16/f32/f64).")
atomic_max = _atomic("max", "Atomic ``*p = max(*p, val)`` (integers, signed or unsigned by type).")
atomic_min = _atomic("min", "Atomic ``*p = min(*p, val)`` (integers, signed or unsigned by type).")
atomic_and = _atomic("and", "Atomic ``*p &= val``.")
atomic_or = _atomic("or", "Atomic ``*p |= val``.")
atomic_xor = _atomic("xor", "Atomic ``*p ^= val``.")
atomic_xchg = _atomic("xchg", "Atomic exchange: ``*p = val``.")


@builtin
def atomic_cas(pointer: Any, cmp: Any, val: Any, sem: Any = "acq_rel", scope: Any = "gpu",
               _semantic: Any = None) -> tensor:
    """Atomic compare-and-swap (i32/i64): ``*p = val if *p == cmp``; returns the old value."""
    return _semantic.atomic_cas(pointer, cmp, val, _unwrap(sem), _unwrap(scope))


@builtin
def pdl_wait(_semantic: Any = None) -> None:
    """Wait until the kernels this launch depends on have finished and their writes are
    visible (``griddepcontrol.wait``). A kernel that calls it (or ``pdl_launch_dependents``)
    is launched with programmatic dependent launch: it may start while the previous kernel
    in the stream still runs, so every read of that kernel's results must come after this."""
    _semantic.pdl_wait()


@builtin
def pdl_launch_dependents(_semantic: Any = None) -> None:
    """Let the next PDL kernel in the stream start once every program got here
    (``griddepcontrol.launch_dependents``); it still waits for this kernel to finish in its
    own ``pdl_wait``."""
    _semantic.pdl_launch_dependents()


@builtin
def cluster_id(axis: Any, _semantic: Any = None) -> tensor:
    """Index of this program's thread-block cluster along grid axis 0, 1 or 2 (int32,
    ``%clusterid``): ``program_id(axis) // cluster[axis]`` for the kernel's ``cluster``
    shape (``@kiln.jit(cluster=(x, y, z))``)."""
    return _semantic.cluster_id(_unwrap(axis))


@builtin
def num_clusters(axis: Any, _semantic: Any = None) -> tensor:
    """Number of clusters along grid axis 0, 1 or 2 (int32, ``%nclusterid``):
    ``num_programs(axis) // cluster[axis]``."""
    return _semantic.num_clusters(_unwrap(axis))


@builtin
def cluster_cta_id(axis: Any, _semantic: Any = None) -> tensor:
    """Index of this program inside its cluster along grid axis 0, 1 or 2 (int32,
    ``%cluster_ctaid``): ``program_id(axis) % cluster[axis]``."""
    return _semantic.cluster_cta_id(_unwrap(axis))


@builtin
def cluster_cta_rank(_semantic: Any = None) -> tensor:
    """Linear rank of this program inside its cluster (int32, ``%cluster_ctarank``):
    ``x + y * cx + z * cx * cy`` for ``(x, y, z) = cluster_cta_id`` and the cluster shape
    ``(cx, cy, cz)``; in ``[0, cluster_size())``."""
    return _semantic.cluster_cta_rank()


@builtin
def cluster_size(_semantic: Any = None) -> tensor:
    """Number of programs in a cluster (int32, ``%cluster_nctarank``; a constant once
    compiled)."""
    return _semantic.cluster_size()


@builtin
def barrier(_semantic: Any = None) -> None:
    """Barrier over the threads of the program (``bar.sync 0``, ``__syncthreads()``): each
    thread waits for the others, and the memory accesses of every thread before it happen
    before those of every thread after it (CTA scope). With a ``fence(scope="gpu")`` before
    it, it makes a scalar atomic after it (one thread's) release every thread's writes: the
    "last program to arrive" pattern::

        kl.store(partial_ptr + pid * N + offs, part)
        kl.fence("release", "gpu")
        kl.barrier()
        if kl.atomic_add(count_ptr, 1) == kl.num_programs(0) - 1:   # acq_rel, gpu
            ...                                                     # every partial visible
    """
    _semantic.barrier()


@builtin
def cluster_barrier(_semantic: Any = None) -> None:
    """Barrier over every thread of every program of the cluster
    (``barrier.cluster.arrive`` + ``wait``; release/acquire at cluster scope): the
    memory writes of the whole cluster before it are visible to the whole cluster after
    it. Every program of the cluster must reach it (like a block barrier)."""
    _semantic.cluster_barrier()


@builtin
def cluster_load(x: Any, rank: Any, _semantic: Any = None) -> tensor:
    """The tile ``x`` of the program of rank ``rank`` in this program's cluster
    (distributed shared memory): every program of the cluster publishes its ``x`` in
    shared memory, then reads the copy of program ``rank`` (a scalar int, it may differ
    between programs; in ``[0, cluster_size())``). Same shape, dtype and layout as ``x``.
    It contains two cluster barriers: every program of the cluster must call it.
    Partials reduce over the cluster with ``total = kl.cluster_load(partial, 0)`` and
    ``for r in range(1, kl.cluster_size()): total += kl.cluster_load(partial, r)``."""
    return _semantic.cluster_load(x, rank)


@builtin
def cluster_gather(x: Any, _semantic: Any = None) -> tensor:
    """The tiles ``x`` of every program of this program's cluster, stacked in rank order:
    shape ``[cluster_size(), *x.shape]``, row ``r`` the ``x`` of the program of rank ``r``
    (distributed shared memory). Every program publishes its ``x`` once and reads every
    rank's copy after ONE cluster barrier; a second one keeps the copies alive until all
    have read (two cluster barriers, where a ``cluster_load`` per rank takes two each). The
    cluster size must be a power of two; every program of the cluster must call it. A
    cluster-wide sum: ``kl.sum(kl.cluster_gather(partial), axis=0)``."""
    return _semantic.cluster_gather(x)


@builtin
def cluster_sum(x: Any, _semantic: Any = None) -> Any:
    """The elementwise sum of ``x`` over the programs of this program's cluster (same
    shape, dtype and layout as ``x``; a tuple of tiles sums each in one exchange), added in
    rank order so that every program gets the same bits. Every program publishes its
    tiles once, ONE cluster barrier, then each thread reads its own elements from every
    program and adds them: no data changes threads (``kl.sum(kl.cluster_gather(x),
    axis=0)`` spreads the ranks over lanes). 32- and 64-bit ints and floats; two cluster
    barriers; every program of the cluster must call it."""
    return _semantic.cluster_sum(x)


class range:  # noqa: A001 - kl.range mirrors the builtin
    """``for i in kl.range(a, b, step, num_stages=N):`` a runtime loop (as ``range``)
    whose tensor-descriptor loads and bulk loads are software-pipelined: the loads of the
    next N - 1 iterations are in flight while one iteration computes (an N-slot ring with one
    mbarrier per slot). In a loop of ``kl.dot``s, loads of tiles of pointers (gathers, e.g.
    a paged key block) are pipelined too, every thread copying its elements with
    ``cp.async`` (docs/language.md). ``num_stages`` is a constexpr in [1,
    ``MAX_NUM_STAGES``] (16; the compiler reports anything else at the loop); 1 or None is
    a plain loop.

    ``warp_specialize=True`` (a constexpr; sm_90a, sm_100a or sm_103a, with ``num_stages``
    >= 2, on a loop at the top level of the kernel whose loads are descriptor loads) fills
    the ring from a
    producer warpgroup of its own: the program runs ``num_warps`` consumer warps (the
    layouts and the math as written) plus 4 producer warps, the last ones (the launch has
    ``num_warps * 32 + 128`` threads, ``threads_per_block`` in the metadata). The producer
    keeps 40 registers a thread (``setmaxnreg.dec``), one of its warps waits for each slot
    to be released and issues the TMA copies; the consumers take the registers freed
    (``setmaxnreg.inc``: 232 for 8 warps), wait for full slots, compute, and release each
    slot once its dot is done: on sm_90a each consumer warp after ``wgmma.wait_group``; on
    sm_100a/sm_103a a GEMM dot on tcgen05 is issued by one elected thread of warp 0 (the
    only warp that waits for full slots) and its ``tcgen05.commit`` releases the slot when
    the MMAs that read it complete, the accumulator staying in Tensor Memory until the
    epilogue. Elsewhere (no arch, other loops) it is a compile error at the loop."""

    #: The most stages a pipelined loop takes (the tile dialect verifies the same bound).
    MAX_NUM_STAGES = 16

    def __init__(self, *args: Any, num_stages: Any = None, warp_specialize: Any = False):
        self.args = args
        self.num_stages = num_stages
        self.warp_specialize = warp_specialize


class static_range:
    """``for i in kl.static_range(a, b, step):`` unrolled at compile time (constexpr
    bounds). A plain ``range`` with runtime or constexpr bounds becomes a loop."""

    def __init__(self, *args: Any):
        self.args = args


@builtin
def abs(x: Any, _semantic: Any = None) -> tensor:  # noqa: A001 - language builtin
    """|x| for ints and floats."""
    return _semantic.abs(x)


@builtin
def maximum(x: Any, y: Any, _semantic: Any = None) -> tensor:
    """Elementwise max (floats: the non-NaN operand wins)."""
    return _semantic.minmax("max", x, y)


@builtin
def minimum(x: Any, y: Any, _semantic: Any = None) -> tensor:
    """Elementwise min (floats: the non-NaN operand wins)."""
    return _semantic.minmax("min", x, y)


@builtin
def sigmoid(x: Any, precise: bool = False, _semantic: Any = None) -> tensor:
    """1 / (1 + exp(-x)), computed in f32 for f16/bf16; fast exp and reciprocal
    (as CUDA's ``__expf``/``__frcp``) unless precise."""
    return _semantic.sigmoid(x, precise=bool(_unwrap(precise)))


@builtin
def fdiv(x: Any, y: Any, ieee_rounding: bool = False, _semantic: Any = None) -> tensor:
    """x / y for floats (Triton's ``tl.fdiv``). With ``ieee_rounding=False`` (the default)
    the hardware's fast division (``div.approx.f32``: x times the reciprocal of y, within 2
    ulp for |y| in [2^-126, 2^126]); with True the correctly rounded ``x / y``. The operator
    ``/`` rounds correctly, which ptxas compiles to a subroutine call; in a kernel with wgmma
    dots any call makes ptxas serialize every wgmma (the kernel's CompilationWarning says
    so), while ``fdiv`` needs none."""
    return _semantic.fdiv(x, y, bool(_unwrap(ieee_rounding)))


@builtin
def fma(x: Any, y: Any, z: Any, _semantic: Any = None) -> tensor:
    """x * y + z with one rounding."""
    return _semantic.fma(x, y, z)


@builtin
def dot(a: Any, b: Any, acc: Any = None, max_num_imprecise_acc: Any = None,
        _semantic: Any = None) -> tensor:
    """``acc + a @ b`` on tensor cores: ``a`` [M, K] and ``b`` [K, N] of one dtype
    (float16, bfloat16 or FP8 float8e4m3/float8e5m2), ``acc`` [M, N] float32 (zeros
    if None); the result is float32 [M, N] with exact products and float32
    accumulation. M, N, K are powers of two, M >= 16, N >= 8, K >= 16 (32 for FP8).

    ``max_num_imprecise_acc`` (FP8 only, a constexpr power of two from 32 to K):
    the tensor cores accumulate at most that many products of K from zero before
    the partial sum is added to the result with float32 adds (Hopper's FP8 wgmma
    accumulates with about 14 mantissa bits). It applies within this dot; in a K
    loop each iteration's dot starts afresh. None: no bound (fastest)."""
    return _semantic.dot(a, b, None if acc is None else _unwrap(acc),
                         _unwrap(max_num_imprecise_acc))


@builtin
def cdiv(x: Any, div: Any, _semantic: Any = None) -> Any:
    """ceil(x / div) for integers (constexprs fold)."""
    return _semantic.cdiv(x, div)


@builtin
def cast(x: Any, dtype: Any, bitcast: Any = False, _semantic: Any = None) -> tensor:
    """``x.to(dtype)``."""
    return _semantic.cast(x, _unwrap(dtype), bitcast=bool(_unwrap(bitcast)))


@builtin
def static_assert(cond: Any, msg: Any = "", _semantic: Any = None) -> None:
    """Fails compilation when the constexpr ``cond`` is false."""
    return _semantic.static_assert(cond, msg)


__all__ = [
    "abs", "arange", "associative_scan", "atomic_add", "atomic_and", "atomic_cas",
    "atomic_max", "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor", "barrier", "bulk_load",
    "cast", "cdiv", "ceil", "cluster_barrier", "cluster_cta_id", "cluster_cta_rank", "cluster_id",
    "cluster_gather", "cluster_load", "cluster_size", "cluster_sum",
    "constexpr", "cos", "cumprod", "cumsum", "dot", "dtype", "dtype_from_str",
    "erf", "exp", "exp2", "fdiv", "fence", "fence_proxy_async", "floor", "fma", "full", "join",
    "load", "log", "log2", "maximum",
    "min_programs_per_sm", "minimum", "nonzero_marker",
    "num_clusters",
    "num_programs", "pdl_launch_dependents", "pdl_wait", "peer_pointer", "permute", "pointer_type",
    "poll_nonzero", "program_id",
    "reduce", "reshape", "rsqrt", "sigmoid", "sin", "split", "sqrt",
    "static_assert", "range",
    "static_range", "store", "sum", "max", "min", "argmax", "argmin", "tanh", "tensor",
    "tensor_descriptor_type", "trans", "where", "zeros", "block_type",
] + [d.name for d in ALL_DTYPES]
