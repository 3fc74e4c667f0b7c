"""A K-loop GEMM on kl.dot: the GEMM benchmark's kernel (bench/gemm/run.py) and the GPU tests'
(test/gpu/test_dot.py)."""

import kiln
import kiln.language as kl

try:
    import torch
except ImportError:  # the kernels compile without torch; gemm_tma launches need it
    torch = None


@kiln.jit
def gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                BM: kl.constexpr, BN: kl.constexpr, BK: kl.constexpr):
    """c[M, N] = a[M, K] @ b[K, N] (unit inner strides) in f32: one [BM, BN] block per
    program (grid = cdiv(M, BM) x cdiv(N, BN)), K in steps of BK, edges masked with 0."""
    rm = kl.program_id(0) * BM + kl.arange(0, BM)
    rn = kl.program_id(1) * BN + kl.arange(0, BN)
    rk = kl.arange(0, BK)
    acc = kl.zeros((BM, BN), kl.float32)
    for k in range(0, K, BK):
        ka = k + rk
        a = kl.load(a_ptr + rm[:, None] * stride_am + ka[None, :],
                    mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        b = kl.load(b_ptr + ka[:, None] * stride_bk + rn[None, :],
                    mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = kl.dot(a, b, acc)
    kl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@kiln.jit
def _grouped_block(M, N, BM: kl.constexpr, BN: kl.constexpr, GROUP_M: kl.constexpr):
    """(block row, block column) of this program, programs ordered in groups of GROUP_M block
    rows (the A rows of a group stay in L2 while its columns sweep)."""
    pid = kl.program_id(0)
    blocks_m = kl.cdiv(M, BM)
    blocks_n = kl.cdiv(N, BN)
    per_group = GROUP_M * blocks_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = kl.minimum(blocks_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows
    return pid_m, pid_n


@kiln.jit(num_warps=8)
def gemm_tma_kernel(a_desc, b_desc, c_desc, bias_ptr, M, N, K, BM: kl.constexpr,
                    BN: kl.constexpr, BK: kl.constexpr, GROUP_M: kl.constexpr,
                    STAGES: kl.constexpr, MAX_IMPRECISE_ACC: kl.constexpr = None,
                    WARP_SPECIALIZE: kl.constexpr = False, BIAS: kl.constexpr = False,
                    ACTIVATION: kl.constexpr = None):
    """c[M, N] = a[M, K] @ b[N, K]^T (bf16/f16 in, f32 accumulation, bf16 out) through
    TMA descriptors: one [BM, BN] block per program, programs ordered in groups of GROUP_M
    block rows (the A rows of a group stay in L2 while its columns sweep), the K loop
    pipelined STAGES deep. With 128-byte swizzled [BM, 64] / [BN, 64] boxes the dot runs from
    the ring slots (kiln-tile-accelerate-dot) on wgmma on sm_90a, and on tcgen05 with the
    accumulator in Tensor Memory on sm_100a/sm_103a when BM = 128 and BN is a multiple of
    16; elsewhere on mma.sync. FP8 dots take ``max_num_imprecise_acc=MAX_IMPRECISE_ACC``
    (None: unbounded; on sm_90a each dot then promotes its wgmma partial sums to f32 every
    MAX_IMPRECISE_ACC elements of K). WARP_SPECIALIZE (sm_90a, sm_100a/sm_103a) fills the
    ring from a producer warpgroup added to the num_warps consumers (kl.range's option).
    The epilogue, in f32 before the bf16 store: with BIAS, + bias[N] (bias_ptr, bf16/f16/f32;
    any pointer when BIAS is off); ACTIVATION "silu": x * sigmoid(x). TMA zero-fills loads
    past the edges and clips the store."""
    pid_m, pid_n = _grouped_block(M, N, BM, BN, GROUP_M)
    acc = kl.zeros((BM, BN), kl.float32)
    for k in kl.range(0, K, BK, num_stages=STAGES, warp_specialize=WARP_SPECIALIZE):
        a = a_desc.load([pid_m * BM, k])
        b = b_desc.load([pid_n * BN, k])
        acc = kl.dot(a, b.T, acc, max_num_imprecise_acc=MAX_IMPRECISE_ACC)
    if BIAS:
        rn = pid_n * BN + kl.arange(0, BN)
        acc = acc + kl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(kl.float32)[None, :]
    if ACTIVATION == "silu":
        acc = acc * kl.sigmoid(acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(kl.bfloat16))


ACTIVATIONS = (None, "silu")


def _c_desc(out, bm, bn):
    """The bf16 output's [BM, BN] box, 128-byte swizzled where BN is a multiple of 64 (the
    box in 64-column chunks): the accumulator's fragments, eight rows a warp, then land in
    distinct banks of the staging buffer (unswizzled rows of BN * 2 bytes put them in the
    same banks: 8-way conflicts, 3 % of an 8192^3 GEMM on the H200, bench/results)."""
    return kiln.TensorDescriptor.from_tensor(out, [bm, bn], swizzle=128 if bn % 64 == 0 else 0)


def gemm_tma(a, b_t, out=None, block=(128, 256, None), group_m=8, stages=3, num_warps=8,
             max_num_imprecise_acc=None, warp_specialize=False, bias=None, activation=None):
    """``act(a @ b_t.T + bias)`` for 2-D bf16/f16 or FP8 (e4m3/e5m2) CUDA tensors a [M, K]
    and b_t [N, K] (the nn.Linear weight layout) into the bf16 ``out`` [M, N] (allocated if
    None), the epilogue fused in f32: ``bias`` a contiguous [N] vector (bf16, f16 or f32) or
    None, ``activation`` None or "silu"; on
    gemm_tma_kernel. ``block`` = (BM, BN, BK); BK None: 128 bytes of K (64 for 16-bit, 128
    for FP8 elements); a multiple of that gives wide boxes (128-byte chunks of K, read in
    place on wgmma and, bf16/f16, tcgen05). K * itemsize must be a multiple of 16 bytes
    (TMA strides).
    ``max_num_imprecise_acc`` (FP8 only): see kl.dot; on sm_90a it keeps a second set of
    accumulator registers live, so (128, 128) blocks on 8 warps avoid spills.
    ``warp_specialize`` (sm_90a, sm_100a/sm_103a): a producer warpgroup issues the loads
    (num_warps + 4 warps a program; see kl.range)."""
    if a.dim() != 2 or b_t.dim() != 2 or a.shape[1] != b_t.shape[1]:
        raise ValueError(f"gemm_tma: expected a [M, K] and b_t [N, K], got {list(a.shape)} "
                         f"and {list(b_t.shape)}")
    if a.dtype != b_t.dtype:
        raise ValueError(f"gemm_tma: a and b_t must share a dtype, got {a.dtype} and "
                         f"{b_t.dtype}")
    if a.element_size() not in (1, 2):
        raise ValueError(f"gemm_tma: expected bf16, f16 or FP8 inputs, got {a.dtype}")
    m, k = (int(s) for s in a.shape)
    n = int(b_t.shape[0])
    if activation not in ACTIVATIONS:
        raise ValueError(f"gemm_tma: activation must be one of {ACTIVATIONS}, got "
                         f"{activation!r}")
    if bias is not None and (bias.dim() != 1 or int(bias.shape[0]) != n or
                             bias.stride(0) != 1 or bias.device != a.device or
                             bias.dtype not in (torch.bfloat16, torch.float16, torch.float32)):
        raise ValueError(f"gemm_tma: bias must be a contiguous bf16, f16 or f32 [N] = [{n}] "
                         f"vector on {a.device}, got {bias.dtype} {list(bias.shape)} on "
                         f"{bias.device}")
    if out is None:
        out = a.new_empty((m, n), dtype=torch.bfloat16)
    bm, bn, bk = block
    bk = bk or 128 // a.element_size()
    swizzle = 128 if bk * a.element_size() % 128 == 0 else 0
    a_desc = kiln.TensorDescriptor.from_tensor(a, [bm, bk], swizzle=swizzle)
    b_desc = kiln.TensorDescriptor.from_tensor(b_t, [bn, bk], swizzle=swizzle)
    c_desc = _c_desc(out, bm, bn)
    if m and n:
        grid = (kiln.cdiv(m, bm) * kiln.cdiv(n, bn),)
        gemm_tma_kernel[grid](a_desc, b_desc, c_desc, out if bias is None else bias, m, n, k,
                              BM=bm, BN=bn, BK=bk, GROUP_M=group_m, STAGES=stages,
                              num_warps=num_warps, MAX_IMPRECISE_ACC=max_num_imprecise_acc,
                              WARP_SPECIALIZE=warp_specialize, BIAS=bias is not None,
                              ACTIVATION=activation)
    return out


@kiln.jit(num_warps=8)
def gemm_tma_kn_kernel(a_desc, b_desc, c_desc, M, N, K, BM: kl.constexpr, BN: kl.constexpr,
                       BK: kl.constexpr, GROUP_M: kl.constexpr, STAGES: kl.constexpr):
    """c[M, N] = a[M, K] @ b[K, N] with b row-major (N contiguous), as gemm_tma_kernel but
    with B loaded as [BK, BN] boxes and no transpose. With 128-byte swizzled [BM, BK] and
    [BK, BN] boxes (bf16/f16, BK and BN multiples of 64: rows of whole 128-byte spans; a
    wider box is copied in 128-byte column chunks, which wgmma reads as the chunks of K of
    a K-major A and the 64-column chunks of N of an MN-major B) the dot runs from the ring
    slots on wgmma with an MN-major B on sm_90a (kiln-tile-accelerate-dot); elsewhere
    (sm_100a/sm_103a, FP8, other boxes) on mma.sync."""
    pid_m, pid_n = _grouped_block(M, N, BM, BN, GROUP_M)
    acc = kl.zeros((BM, BN), kl.float32)
    for k in kl.range(0, K, BK, num_stages=STAGES):
        a = a_desc.load([pid_m * BM, k])
        b = b_desc.load([k, pid_n * BN])
        acc = kl.dot(a, b, acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(kl.bfloat16))


#: gemm_tma_kn's default (block, stages) per arch. sm_90a: 128x256 blocks (the MN-major B read
#: in place by wgmma; 0.95x / 0.93x cuBLAS at 4096^3 / 8192^3 on the H200 against 0.84x /
#: 0.89x for 128x128, bench/results/h200-bench_gemm_wide.md). sm_100a/sm_103a run the dot on
#: mma.sync (an MN-major B has no tcgen05 form here) and keep KN_FALLBACK: not timed there.
KN_DEFAULTS = {"sm_90a": ((128, 256, 64), 3)}
KN_FALLBACK = ((128, 128, 64), 4)


def _arch_of(t):
    """The kiln arch of the tensor's device (sm_90a on anything but Blackwell)."""
    major, minor = torch.cuda.get_device_capability(t.device)
    return {(10, 0): "sm_100a", (10, 3): "sm_103a"}.get((major, minor), "sm_90a")


def gemm_tma_kn(a, b, out=None, block=None, group_m=8, stages=None, num_warps=8):
    """``a @ b`` for 2-D bf16/f16 CUDA tensors a [M, K] and b [K, N] (row-major: the layout
    ``torch.matmul`` takes) into the bf16 ``out`` [M, N] (allocated if None), on
    gemm_tma_kn_kernel. ``block`` = (BM, BN, BK); BN and BK multiples of 64 give 128-byte
    swizzled boxes (a B box of BN = 128 or 256 holds two or four 64-column chunks of N), the
    form wgmma reads in place on sm_90a. ``block`` and ``stages`` None: the arch's default
    (``KN_DEFAULTS``: 128x256x64 on 3 stages on sm_90a, 128x128x64 on 4 elsewhere). N * 2
    and K * 2 must be multiples of 16 bytes (TMA strides)."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"gemm_tma_kn: expected a [M, K] and b [K, N], got {list(a.shape)} "
                         f"and {list(b.shape)}")
    if a.dtype != b.dtype or a.element_size() != 2:
        raise ValueError(f"gemm_tma_kn: expected bf16 or f16 inputs of one dtype, got {a.dtype} "
                         f"and {b.dtype}")
    m, k = (int(s) for s in a.shape)
    n = int(b.shape[1])
    if out is None:
        out = a.new_empty((m, n), dtype=torch.bfloat16)
    default_block, default_stages = KN_DEFAULTS.get(_arch_of(a), KN_FALLBACK)
    bm, bn, bk = block or default_block
    stages = stages or default_stages
    a_desc = kiln.TensorDescriptor.from_tensor(a, [bm, bk], swizzle=128 if bk % 64 == 0 else 0)
    b_desc = kiln.TensorDescriptor.from_tensor(b, [bk, bn], swizzle=128 if bn % 64 == 0 else 0)
    c_desc = _c_desc(out, bm, bn)
    if m and n:
        grid = (kiln.cdiv(m, bm) * kiln.cdiv(n, bn),)
        gemm_tma_kn_kernel[grid](a_desc, b_desc, c_desc, m, n, k, BM=bm, BN=bn, BK=bk,
                                 GROUP_M=group_m, STAGES=stages, num_warps=num_warps)
    return out
