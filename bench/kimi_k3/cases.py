"""The Kimi K3 benchmark's cases: for every op of kernels_dsl/kimi_k3 (and the row RMSNorm of
kernels_dsl/common/norm.py), one function that builds its inputs at a K3 shape, the bytes the
kernel must move, the kiln call and the torch reference (the eager peer; the runner adds
torch.compile of it), and ``check`` for the reference comparison. ``CASES`` lists them with the
shapes the table runs. bench/kimi_k3/run.py times them; bench/kimi_k3/sweeps.py names the
configurations to sweep.

A case is ``Case(name, shape, nbytes, sets, kiln, ref)``: ``sets`` are argument tuples, enough of
them to rotate through more than the L2; ``kiln(*args, settings=...)`` calls the wrapper (with
a module's ``Settings`` when given); ``ref(*args)`` returns what the kiln call must equal.
"""

from typing import Any, Callable, List, NamedTuple

import torch
import torch.nn.functional as F

from kernels_dsl.common import norm
from kernels_dsl.kimi_k3 import (
    attn_res,
    concat_mla,
    image,
    kv_indices,
    mla_kv,
    mla_output_gate,
    moe_align,
    moe_fused_gate,
    pack_topk_ids,
    quant,
    situ_quant,
    tensor_hash,
)

H_LOCAL, HEAD_DIM, TOPK, EXPERTS = 12, 128, 16, 896
TS = (1, 64, 4096, 16384)
L2_BYTES = 256 << 20  # rotate through at least this much input per case (H200 L2: 50 MB)


class Case(NamedTuple):
    name: str
    shape: str
    nbytes: int
    sets: List[tuple]
    kiln: Callable[..., Any]
    ref: Callable[..., Any]


def n_sets(bytes_per_set):
    return max(1, min(64, L2_BYTES // max(bytes_per_set, 1)))


def _bits(a):
    if a.dtype == torch.bfloat16:
        return a.view(torch.int16)
    if a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return a.view(torch.uint8)
    return a


def bits_equal(a, b):
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(bits_equal(x, y) for x, y in zip(a, b))
    return torch.equal(_bits(a), _bits(b))


def case_pack_topk_ids(t):
    nbytes = t * TOPK * 12
    sets = [(torch.randint(0, EXPERTS, (t, TOPK), device="cuda", dtype=torch.int32),
             torch.rand(t, TOPK, device="cuda"),
             torch.empty(t, TOPK, device="cuda", dtype=torch.int32))
            for _ in range(n_sets(nbytes))]

    def ref(ids, w, out):
        return (ids << 16) | (w.bfloat16().view(torch.int16).int() & 0xFFFF)

    return Case("pack_topk_ids", f"[{t}, {TOPK}]", nbytes, sets,
                lambda ids, w, out, **kw: pack_topk_ids.pack_topk_ids(ids, w, out, **kw), ref)


def case_concat_mla_k(t):
    h = H_LOCAL
    nbytes = t * h * (128 + 192) * 2 + t * 64 * 2
    sets = []
    for _ in range(n_sets(nbytes)):
        kv_b = torch.randn(t, h, 256, device="cuda", dtype=torch.bfloat16)  # nope | v
        kv_a = torch.randn(t, 576, device="cuda", dtype=torch.bfloat16)     # latent | rope
        sets.append((torch.empty(t, h, 192, device="cuda", dtype=torch.bfloat16),
                     kv_b[:, :, :128], kv_a[:, 512:].unsqueeze(1)))

    def ref(k, k_nope, k_rope):
        k[..., :128] = k_nope
        k[..., 128:] = k_rope
        return k

    return Case("concat_mla_k", f"[{t}, {h}, 192] (strided k_nope)", nbytes, sets,
                concat_mla.concat_mla_k, ref)


def case_concat_mla_absorb_q(t):
    h = H_LOCAL
    nbytes = t * h * (512 + 64) * 2 * 2
    sets = [(torch.randn(t, h, 512, device="cuda", dtype=torch.bfloat16),
             torch.randn(t, h, 64, device="cuda", dtype=torch.bfloat16),
             torch.empty(t, h, 576, device="cuda", dtype=torch.bfloat16))
            for _ in range(n_sets(nbytes))]
    return Case("concat_mla_absorb_q", f"[{t}, {h}, 512+64]", nbytes, sets,
                concat_mla.concat_mla_absorb_q, lambda a, b, out: torch.cat([a, b], dim=-1))


def case_mla_output_gate(t):
    n = t * H_LOCAL * HEAD_DIM
    nbytes = 3 * n * 2
    sets = [(torch.randn(t, H_LOCAL * HEAD_DIM, device="cuda", dtype=torch.bfloat16),
             torch.randn(t, H_LOCAL * HEAD_DIM, device="cuda", dtype=torch.bfloat16),
             torch.empty(t, H_LOCAL * HEAD_DIM, device="cuda", dtype=torch.bfloat16))
            for _ in range(n_sets(nbytes))]
    return Case("mla_output_gate", f"[{t}, {H_LOCAL * HEAD_DIM}]", nbytes, sets,
                mla_output_gate.mla_output_gate, lambda x, g, out: x * torch.sigmoid(g))


def kv_scatter_sets(t, width, dtype, layout, nbytes):
    """(argument sets, shape) of a KV scatter case: kv_c and k_pe (slices of one [T, 576]
    projection), distinct loc and the cache: [4T + 64, width] ("flat"); one layer of a
    [pages, 2, 64, width] pool ("layer": the paged kernels); [3273604, width] past 2^31 bytes
    at width 656, one for every set ("past 2^31": the FP8 kernel's 64-bit offsets)."""
    slots = {"flat": 4 * t + 64, "layer": -(-(4 * t + 64) // 64) * 64,
             "past 2^31": 3_273_604}[layout]
    shared = (torch.zeros(slots, width, device="cuda", dtype=dtype) if layout == "past 2^31"
              else None)
    sets = []
    for _ in range(n_sets(nbytes)):
        kv_a = torch.randn(t, 576, device="cuda", dtype=torch.bfloat16)
        if layout == "layer":
            cache = torch.zeros(slots // 64, 2, 64, width, device="cuda", dtype=dtype)[:, 1]
        else:
            cache = shared if shared is not None else torch.zeros(slots, width, device="cuda",
                                                                  dtype=dtype)
        sets.append((kv_a[:, :512], kv_a[:, 512:],
                     torch.randperm(slots, device="cuda")[:t].to(torch.int64), cache))
    shape = (f"[{slots // 64}, 64, {width}] (a layer of 2)" if layout == "layer"
             else f"[{slots}, {width}]")
    return sets, f"T={t} -> {shape}"


def cache_rows(cache, loc):
    """The index of rows ``loc`` of a [slots, W] or [pages, page_size, W] cache."""
    return (loc // cache.shape[1], loc % cache.shape[1]) if cache.dim() == 3 else loc


def case_mla_kv_scatter(t, layout="flat"):
    nbytes = t * 576 * 2 * 2 + t * 8
    sets, shape = kv_scatter_sets(t, 576, torch.bfloat16, layout, nbytes)

    def ref(kv_c, k_pe, loc, cache):
        cache[cache_rows(cache, loc)] = torch.cat([kv_c, k_pe], dim=-1)
        return cache

    return Case("mla_kv_scatter (bf16)", shape, nbytes, sets, mla_kv.mla_kv_scatter, ref)


# FP8 family (docs/kernels: quant.md, situ.md, mla_output_gate.md, mla_cache.md): the torch
# references are the formulas.
F8 = torch.float8_e4m3fn
HIDDEN, MOE_INTER, SITU_EXPERTS = 7168, 3072, 8


def fp8_scale(absmax):
    """max(absmax, 1e-10) / 448 as an IEEE division: torch divides by a Python scalar by
    multiplying with its reciprocal (one ulp off for about half the values)."""
    a = absmax.clamp(min=1e-10)
    return a / torch.full_like(a, 448.0)


def ref_group_quant(x, group=128):
    xg = x.float().unflatten(-1, (-1, group))
    s = fp8_scale(xg.abs().amax(-1))
    return (xg / s[..., None]).clamp(-448, 448).to(F8).flatten(-2), s


def case_group_quant_fp8(t):
    nbytes = t * HIDDEN * (2 + 1) + t * (HIDDEN // 128) * 4
    sets = [(torch.randn(t, HIDDEN, device="cuda", dtype=torch.bfloat16),
             torch.empty(t, HIDDEN, device="cuda", dtype=F8),
             torch.empty(t, HIDDEN // 128, device="cuda"))
            for _ in range(n_sets(nbytes))]
    return Case("per_token_group_quant_fp8", f"[{t}, {HIDDEN}] g128", nbytes, sets,
                lambda x, q, s, **kw: quant.per_token_group_quant_fp8(x, q=q, s=s, **kw),
                lambda x, q, s: ref_group_quant(x))


E2M1_GRID = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def ref_mxfp4(x):
    """OCP MXFP4 from the formula (float32: x / 2^k is exact)."""
    r, d = x.shape
    xb = x.float().reshape(r, d // 32, 32)
    amax = xb.abs().amax(-1)
    _, ex = torch.frexp(amax)
    byte = torch.where(amax > 0, (ex + 124).clamp(0, 254), 0)
    v = xb * torch.exp2(127 - byte.float())[..., None]
    a = v.abs()
    m = ((a > 0.25).int() + (a >= 0.75).int() + (a > 1.25).int() + (a >= 1.75).int()
         + (a > 2.5).int() + (a >= 3.5).int() + (a > 5.0).int())
    code = (m | torch.where(v < 0, 8, 0)).reshape(r, d)
    return (code[:, 0::2] | (code[:, 1::2] << 4)).to(torch.uint8), byte.to(torch.uint8)


def case_quant_mxfp4(t):
    nbytes = t * HIDDEN * 2 + t * HIDDEN // 2 + t * HIDDEN // 32
    sets = [(torch.randn(t, HIDDEN, device="cuda", dtype=torch.bfloat16),
             torch.empty(t, HIDDEN // 2, device="cuda", dtype=torch.uint8),
             torch.empty(t, HIDDEN // 32, device="cuda", dtype=torch.uint8))
            for _ in range(n_sets(nbytes))]
    return Case("quant_mxfp4", f"[{t}, {HIDDEN}]", nbytes, sets, quant.quant_mxfp4,
                lambda x, p, s: ref_mxfp4(x))


def case_situ_quant_fp8(t):
    """DeepEP low-latency layout: 8 local experts, T_pad = T / 8 tokens each, all valid."""
    e, t_pad, n = SITU_EXPERTS, max(1, t // SITU_EXPERTS), MOE_INTER
    nbytes = e * t_pad * (2 * n * 2 + n + (n // 128) * 4)
    sets = [(torch.randn(e, t_pad, 2 * n, device="cuda", dtype=torch.bfloat16),
             torch.full((e,), t_pad, device="cuda", dtype=torch.int32),
             torch.empty(e, t_pad, n, device="cuda", dtype=F8),
             torch.empty(e, t_pad, n // 128, device="cuda"))
            for _ in range(n_sets(nbytes))]

    def ref(x, masked_m, q, s):
        g, u = x[..., :n].float(), x[..., n:].float()
        a = 4.0 * torch.tanh(g / 4.0) * torch.sigmoid(g) * (25.0 * torch.tanh(u / 25.0))
        return ref_group_quant(a)  # every row valid here

    return Case("situ_and_mul_masked_post_quant", f"[{e}, {t_pad}, {2 * n}]", nbytes, sets,
                lambda x, m, q, s, **kw: situ_quant.situ_and_mul_masked_post_quant(
                    x, m, q, s, **kw), ref)


def case_mla_output_gate_fp8(t):
    h = H_LOCAL * HEAD_DIM
    nbytes = t * h * (2 + 2 + 1) + t * 4
    sets = [(torch.randn(t, h, device="cuda", dtype=torch.bfloat16),
             torch.randn(t, h, device="cuda", dtype=torch.bfloat16),
             torch.empty(t, h, device="cuda", dtype=F8), torch.empty(t, device="cuda"))
            for _ in range(n_sets(nbytes))]

    def ref(x, g, q, s):
        y = (x * torch.sigmoid(g)).float()
        sc = fp8_scale(y.abs().amax(-1))
        return (y / sc[:, None]).clamp(-448, 448).to(F8), sc

    return Case("mla_output_gate_fp8", f"[{t}, {h}]", nbytes, sets,
                mla_output_gate.mla_output_gate_fp8, ref)


def case_mla_kv_scatter_fp8(t, layout="flat"):
    nbytes = t * (576 * 2 + 656 + 8)
    sets, shape = kv_scatter_sets(t, 656, torch.uint8, layout, nbytes)

    def ref(kv_c, k_pe, loc, cache):
        q, s = ref_group_quant(kv_c)
        cache[cache_rows(cache, loc)] = torch.cat([q.view(torch.uint8), s.view(torch.uint8),
                                                   k_pe.contiguous().view(torch.uint8)], dim=-1)
        return cache

    return Case("mla_kv_scatter_fp8", shape, nbytes, sets, mla_kv.mla_kv_scatter_fp8, ref)


def case_image(n, h, w, oh, ow):
    nbytes = n * h * w * 3 + n * oh * ow * 3 * 2
    mean = torch.tensor(image.CLIP_MEAN, device="cuda").view(1, 3, 1, 1)
    std = torch.tensor(image.CLIP_STD, device="cuda").view(1, 3, 1, 1)
    sets = [(torch.randint(0, 256, (n, h, w, 3), device="cuda", dtype=torch.uint8),)
            for _ in range(n_sets(nbytes))]

    def ref(img):
        x = img.permute(0, 3, 1, 2).float()
        x = F.interpolate(x, size=(oh, ow), mode="bilinear", align_corners=False)
        x = (x / 255.0 - mean) / std
        x = x.reshape(n, 3, oh // 14, 14, ow // 14, 14).permute(0, 2, 4, 1, 3, 5)
        return x.reshape(n, (oh // 14) * (ow // 14), 588).to(torch.bfloat16)

    return Case("image_preprocess", f"{n}x{h}x{w} -> {oh}x{ow}", nbytes, sets,
                lambda img, **kw: image.image_preprocess(img, oh, ow, **kw), ref)


_RMS_W = []


def _rms_weight():
    """One RMSNorm weight for every T (the compiled reference closes over it)."""
    if not _RMS_W:
        _RMS_W.append((torch.rand(HIDDEN, device="cuda") + 0.5).bfloat16())
    return _RMS_W[0]


def case_rmsnorm(t):
    """Row RMSNorm at hidden 7168 (common/norm.py; eps 1e-6): read x and w, write y."""
    d = HIDDEN
    nbytes = 2 * t * d * 2 + d * 2
    w = _rms_weight()
    sets = [(torch.randn(t, d, device="cuda", dtype=torch.bfloat16),
             torch.empty(t, d, device="cuda", dtype=torch.bfloat16))
            for _ in range(n_sets(nbytes))]

    def ref(x, out):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(dim=1, keepdim=True) + 1e-6)
                * w.float()).bfloat16()

    return Case("rmsnorm", f"[{t}, {d}]", nbytes, sets,
                lambda x, out, **kw: norm.rmsnorm(x, w, 1e-6, out, **kw), ref)


ATTN_RES_EPS = 1e-6
_ATTN_RES_W = []


def _attn_res_weights():
    """cw and ow for every T (the compiled reference closes over them)."""
    if not _ATTN_RES_W:
        g = torch.Generator(device="cuda").manual_seed(0)
        _ATTN_RES_W.append(((torch.randn(HIDDEN, device="cuda", generator=g) * 4
                             / HIDDEN ** 0.5).bfloat16(),
                            (torch.rand(HIDDEN, device="cuda", generator=g) + 0.5).bfloat16()))
    return _ATTN_RES_W[0]


def _case_attn_res(t, nvb, write_prefix):
    """Attention residuals (docs/kernels/attn_res.md) at H = 7168, bank [T, 9, H]: read nvb
    bank rows and the prefix row, write the output (and the snapshot bank[:, nvb] with
    write_prefix); cw and ow once. The reference is the spec's formula in fp32 (torch)."""
    h, nb = HIDDEN, 9
    nbytes = t * h * 2 * (nvb + 2 + int(write_prefix)) + 2 * h * 2
    cw, ow = _attn_res_weights()
    sets = []
    for _ in range(n_sets(nbytes)):
        prefix = torch.randn(t, h, device="cuda", dtype=torch.bfloat16)
        scale = torch.exp(torch.rand(t, nb, 1, device="cuda") * 3 - 1)
        bank = (torch.randn(t, nb, h, device="cuda") * scale).bfloat16()
        sets.append((prefix, bank, torch.empty(t, h, device="cuda", dtype=torch.bfloat16)))

    def kiln_fn(prefix, bank, out, **kw):
        o = attn_res.attn_res(prefix, bank, cw, ow, out, nvb=nvb, eps=ATTN_RES_EPS,
                              write_prefix=write_prefix, **kw)
        return (o, bank[:, nvb]) if write_prefix else o

    def ref(prefix, bank, out):
        rows = torch.cat([bank[:, :nvb], prefix[:, None]], dim=1).float()
        score = (rows * cw.float()).sum(-1) * torch.rsqrt(rows.pow(2).mean(-1) + ATTN_RES_EPS)
        p = torch.softmax(score, dim=-1)
        mix = (p[:, :, None] * rows).sum(1)
        o = (mix * torch.rsqrt(mix.pow(2).mean(-1, keepdim=True) + ATTN_RES_EPS)
             * ow.float()).bfloat16()
        if write_prefix:
            bank[:, nvb] = prefix
            return o, bank[:, nvb]
        return o

    name = "attn_res_write_prefix" if write_prefix else "attn_res"
    return Case(name, f"[{t}, {h}] nvb={nvb}, bank [{t}, {nb}, {h}]", nbytes, sets, kiln_fn,
                ref)


def case_attn_res(t):
    """The most rows K3 reads (nvb = 8), no snapshot."""
    return _case_attn_res(t, 8, False)


def case_attn_res_write_prefix(t):
    """A block boundary: nvb = 4 rows read and the new snapshot written."""
    return _case_attn_res(t, 4, True)


KV_PAGE, KV_MULT, KV_CTX = 64, 24, 8192


def case_kv_indices(t):
    """FlashMLA block table for a decode batch of bs = T requests with contexts up to 8192
    tokens (128 pages of 64), the K3 unified pool (v2p given, PAGE_MULT = 24 MLA layers):
    bytes = the token ids and v2p entries read, the block-table entries written."""
    bs, max_blocks = t, KV_CTX // KV_PAGE
    num_pages = max(bs * max_blocks // 2, 1)
    lens = torch.randint(1, KV_CTX + 1, (bs,), device="cuda", dtype=torch.int32)
    pages = int(((lens.long() + KV_PAGE - 1) // KV_PAGE).sum())
    nbytes = pages * (4 + 8 + 4) + bs * (8 + 4)
    max_reqs = bs + 8
    sets = []
    for _ in range(max(1, min(8, n_sets(max_reqs * KV_CTX * 4)))):
        pg = torch.randint(0, num_pages, (max_reqs, max_blocks), device="cuda")
        r2t = (pg[:, :, None] * KV_PAGE
               + torch.arange(KV_PAGE, device="cuda")).reshape(max_reqs, -1).int()
        req = torch.randperm(max_reqs, device="cuda")[:bs].long()
        v2p = torch.randperm(num_pages + 1, device="cuda").long()
        sets.append((r2t, req, lens, v2p,
                     torch.full((bs, max_blocks), -7, device="cuda", dtype=torch.int32)))

    def ref(r2t, req, lens, v2p, out):
        p = torch.arange(max_blocks, device="cuda")
        tok = r2t[req[:, None], (p * KV_PAGE)[None, :]].long()
        vpage = torch.div(tok, KV_PAGE, rounding_mode="floor")
        val = (v2p[vpage] * KV_MULT).int()
        write = p[None, :] < ((lens.long() + KV_PAGE - 1) // KV_PAGE)[:, None]
        return torch.where(write, val, out)

    return Case("kv_indices", f"bs={bs}, ctx<={KV_CTX}, v2p, PAGE_MULT={KV_MULT}", nbytes, sets,
                lambda r2t, req, lens, v2p, out, **kw: kv_indices.kv_indices(
                    r2t, req, lens, out, v2p=v2p, page_size=KV_PAGE, page_mult=KV_MULT, **kw),
                ref)


ALIGN_BLOCK = 16


def case_moe_align_single_token(t):
    """One decode token's 16 expert ids (M == 1, its only use; T > 1 is not a case)."""
    if t != 1:
        return None
    topk, b = TOPK, ALIGN_BLOCK
    sets = []
    for _ in range(16):
        ids = torch.randperm(EXPERTS, device="cuda")[:topk].int()[None, :]
        sets.append((ids, torch.empty(topk * b, device="cuda", dtype=torch.int32),
                     torch.empty(topk, device="cuda", dtype=torch.int32),
                     torch.empty(1, device="cuda", dtype=torch.int32)))
    nbytes = topk * 4 + topk * b * 4 + topk * 4 + 4

    def ref(ids, sorted_ids, expert_ids, post):
        row = ids[0].long()
        valid = row >= 0
        key = torch.where(valid, row, 2**31 - 1)
        order = torch.argsort(key, stable=True)
        n = valid.sum()
        rank = torch.arange(topk, device="cuda")
        used = rank < n
        e = torch.where(used, row[order], -1).int()
        s = torch.full((topk, b), topk, dtype=torch.int32, device="cuda")
        s[:, 0] = torch.where(used, order, topk).int()
        return s.reshape(-1), e, (n * b).int().reshape(1)

    return Case("moe_align_single_token", f"[1, {topk}], block {b}", nbytes, sets,
                lambda ids, s, e, p: moe_align.moe_align_single_token(ids, b, s, e, p), ref)


_U64 = (1 << 64) - 1


def _s64(v):
    """The uint64 constant v as the int64 with the same bits (torch has no uint64 math)."""
    return v - (1 << 64) if v >= 1 << 63 else v


def _fmix64_torch(x):
    """tensor_hash's splitmix64 finalizer on int64 tensors holding uint64 bits: logical
    shifts as arithmetic shifts masked, multiplications wrapping mod 2^64."""
    x = x ^ ((x >> 30) & ((1 << 34) - 1))
    x = x * _s64(tensor_hash.M1)
    x = x ^ ((x >> 27) & ((1 << 37) - 1))
    x = x * _s64(tensor_hash.M2)
    return x ^ ((x >> 31) & ((1 << 33) - 1))


def case_gpu_tensor_hash(t):
    """The hash of a [T, 7168] bf16 tensor (kernels_dsl/kimi_k3/tensor_hash.py), both passes
    (``launch_hash``), without the wrapper's device-to-host copy of the result (so that it can
    be graph-timed)."""
    n = t * HIDDEN * 2
    num_partials = (n // 4 + 1023) // 1024  # room for every swept grid unit (>= 1024 words)
    nbytes = n + tensor_hash.num_partials(n) * 8 * 2 + 8
    sets = [(torch.randn(t, HIDDEN, device="cuda", dtype=torch.bfloat16),
             torch.empty(num_partials, device="cuda", dtype=torch.int64),
             torch.empty(1, device="cuda", dtype=torch.int64))
            for _ in range(n_sets(n))]

    def kiln_hash(x, partials, out, **kw):
        return tensor_hash.launch_hash(x.reshape(-1).view(torch.uint8), n, partials, out, **kw)

    def ref(x, partials, out):
        w = x.reshape(-1).view(torch.int32).long() & 0xFFFFFFFF  # n % 4 == 0: no padding
        i = torch.arange(w.numel(), device="cuda", dtype=torch.int64)
        s = _fmix64_torch((i << 32) ^ w ^ tensor_hash.SEED).sum()
        # the length term mod 2^64 as an int64 (n * GOLDEN as a Python int overflows int64,
        # and torch rejects it: OverflowError: can't convert negative int to unsigned)
        return _fmix64_torch(s + _s64(w.numel() * 4 * tensor_hash.GOLDEN & _U64)).reshape(1)

    return Case("gpu_tensor_hash", f"[{t}, {HIDDEN}] bf16", nbytes, sets, kiln_hash, ref)


def case_moe_fused_gate(t):
    """moe_fused_gate (docs/kernels/moe_routing.md): scores fp32 [T, 896] + bias [896] ->
    top-16 weights fp32 and ids int32, sigmoid scoring, renormalized."""
    nbytes = t * EXPERTS * 4 + EXPERTS * 4 + t * TOPK * 8
    bias = torch.randn(EXPERTS, device="cuda") * 0.1
    sets = [(torch.randn(t, EXPERTS, device="cuda"),) for _ in range(n_sets(nbytes))]

    def ref(scores):
        a = torch.sigmoid(scores)
        b = torch.nan_to_num(a + bias, nan=-1e30)
        ids = torch.argsort(-b, dim=1, stable=True)[:, :TOPK]
        w = a.gather(1, ids)
        w = w / w.sum(1, keepdim=True)
        return w, ids.int()

    return Case("moe_fused_gate", f"[{t}, {EXPERTS}] top-{TOPK}", nbytes, sets,
                lambda scores, **kw: moe_fused_gate.moe_fused_gate(scores, bias, TOPK, **kw),
                ref)


def check(name, kiln_fn, ref_fn, args):
    if name.startswith("situ_and_mul_masked"):  # approximate tanh/sigmoid: dequantized values
        cloned = [a.clone() for a in args]
        (q, s), (rq, rs) = kiln_fn(*args), ref_fn(*cloned)
        got = q.float().unflatten(-1, (-1, 128)) * s[..., None]
        want = rq.float().unflatten(-1, (-1, 128)) * rs[..., None]
        torch.testing.assert_close(got, want, rtol=0.13, atol=1e-3)  # one fp8 step apart
        return
    if name.startswith("image"):
        got, want = kiln_fn(*args), ref_fn(*args)
        torch.testing.assert_close(got.float(), want.float(), rtol=2.0**-7, atol=2e-2)
        return
    if name.startswith("rmsnorm"):  # rsqrt and the sum order: bf16 rounding apart
        got, want = kiln_fn(*args), ref_fn(*args)
        torch.testing.assert_close(got.float(), want.float(), rtol=2.0**-7, atol=1e-5)
        return
    if name.startswith("attn_res"):  # fp32 sums in another order: a bf16 ulp apart; the
        # snapshot bit for bit
        got, want = kiln_fn(*args), ref_fn(*[a.clone() for a in args])
        got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        torch.testing.assert_close(got[0].float(), want[0].float(), rtol=2.0**-7, atol=1e-5)
        if len(got) > 1 and not bits_equal(got[1], want[1]):
            raise AssertionError(f"{name}: the snapshot bank[:, nvb] is not the prefix row")
        return
    if name.startswith("moe_fused_gate"):  # ids exact; weights from the fast sigmoid
        (w, ids), (rw, rids) = kiln_fn(*args), ref_fn(*args)
        if not torch.equal(ids.int(), rids):
            raise AssertionError(f"{name}: expert ids differ from the reference")
        torch.testing.assert_close(w, rw, rtol=1e-5, atol=1e-6)
        return
    cloned = [a.clone() for a in args]
    got = kiln_fn(*args)
    want = ref_fn(*cloned)
    if not bits_equal(got, want):
        raise AssertionError(f"{name}: kiln differs from the reference")


#: (case factory, [argument tuples]): every kernel of kernels_dsl/kimi_k3 (+ RMSNorm), at the
#: shapes of the table.
IMAGE_SHAPES = [(1, 1080, 1920, 448, 798), (8, 512, 512, 448, 448), (64, 224, 224, 224, 224)]
CASES = [
    (case_rmsnorm, [(t,) for t in TS]),
    (case_attn_res, [(t,) for t in TS]),
    (case_attn_res_write_prefix, [(t,) for t in TS]),
    (case_pack_topk_ids, [(t,) for t in TS]),
    (case_moe_fused_gate, [(t,) for t in TS]),
    (case_moe_align_single_token, [(1,)]),
    (case_kv_indices, [(t,) for t in TS]),
    (case_concat_mla_k, [(t,) for t in TS]),
    (case_concat_mla_absorb_q, [(t,) for t in TS]),
    (case_mla_output_gate, [(t,) for t in TS]),
    (case_mla_kv_scatter, [(t,) for t in TS] + [(16384, "layer")]),
    (case_group_quant_fp8, [(t,) for t in TS]),
    (case_quant_mxfp4, [(t,) for t in TS]),
    (case_situ_quant_fp8, [(t,) for t in TS]),
    (case_mla_output_gate_fp8, [(t,) for t in TS]),
    (case_mla_kv_scatter_fp8, [(t,) for t in TS] + [(16384, "layer"), (16384, "past 2^31")]),
    (case_gpu_tensor_hash, [(t,) for t in TS]),
    (case_image, IMAGE_SHAPES),
]
