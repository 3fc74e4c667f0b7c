"""The benchmark's Triton peer: MLA decode / verify over a paged latent cache, split-KV with a
merge pass, written for the benchmark from the math (docs/kernels/mla_attention.md) in the
form SGLang's Triton MLA decode takes (``decode_attention_fwd_grouped``: BLOCK_H query heads
a program, the 512 latent columns and the 64 rope columns as two dots, the latent tile reused
as the value, online softmax, partial (out, lse) merged by a second kernel). Query rows are
(draft, head) pairs, draft s seeing the request's rows n <= total - S + s."""

import triton
import triton.language as tl


@triton.jit
def _mla_split(q_ptr, kv_ptr, bt_ptr, tot_ptr, o_ptr, lse_ptr, sm_scale, H, S, n_splits,
               stride_qb, stride_qs, stride_qh, stride_page, stride_bt, PAGE: tl.constexpr,
               BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0)
    hb = tl.program_id(1)
    split = tl.program_id(2)
    rows = hb * BLOCK_H + tl.arange(0, BLOCK_H)  # (draft, head) rows, draft-major
    s_of = rows // H
    h = rows % H
    row_ok = rows < S * H
    total = tl.load(tot_ptr + b)
    chunk = tl.cdiv(tl.cdiv(total, n_splits), BLOCK_N) * BLOCK_N
    lo = split * chunk
    hi = tl.minimum(lo + chunk, total)
    dl = tl.arange(0, 512)
    dr = tl.arange(0, 64)
    q_off = b * stride_qb + s_of * stride_qs + h * stride_qh
    q = tl.load(q_ptr + q_off[:, None] + dl[None, :], mask=row_ok[:, None], other=0.0)
    qr = tl.load(q_ptr + q_off[:, None] + 512 + dr[None, :], mask=row_ok[:, None], other=0.0)
    last = total - S + s_of
    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([BLOCK_H, 512], tl.float32)
    scale = sm_scale * 1.4426950408889634
    for n in range(lo, hi, BLOCK_N):
        key = n + tl.arange(0, BLOCK_N)
        ok = key < hi
        page = tl.load(bt_ptr + b * stride_bt + key // PAGE, mask=ok, other=0)
        base = page.to(tl.int64) * stride_page + (key % PAGE) * 576
        k = tl.load(kv_ptr + base[:, None] + dl[None, :], mask=ok[:, None], other=0.0)
        kr = tl.load(kv_ptr + base[:, None] + 512 + dr[None, :], mask=ok[:, None], other=0.0)
        qk = tl.dot(q, tl.trans(k)) + tl.dot(qr, tl.trans(kr))
        qk = tl.where((key[None, :] <= last[:, None]) & ok[None, :], qk * scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp2(m_i - m_use)
        p = tl.exp2(qk - m_use[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(k.dtype), k)
        m_i = m_new
    l_safe = tl.where(l_i > 0, l_i, 1.0)
    part = ((b * S + s_of) * H + h) * n_splits + split
    tl.store(o_ptr + part[:, None] * 512 + dl[None, :], acc / l_safe[:, None],
             mask=row_ok[:, None])
    tl.store(lse_ptr + part, tl.where(l_i > 0, m_i + tl.log2(l_safe), float("-inf")),
             mask=row_ok)


@triton.jit
def _mla_merge(o_ptr, lse_ptr, out_ptr, n_splits, BLOCK_S: tl.constexpr):
    row = tl.program_id(0)
    sp = tl.arange(0, BLOCK_S)
    d = tl.arange(0, 512)
    ok = sp < n_splits
    lse = tl.load(lse_ptr + row * n_splits + sp, mask=ok, other=float("-inf"))
    m = tl.max(lse, 0)
    m = tl.where(m == float("-inf"), 0.0, m)
    w = tl.exp2(lse - m)
    o = tl.load(o_ptr + (row * n_splits + sp)[:, None] * 512 + d[None, :], mask=ok[:, None],
                other=0.0)
    tot = tl.sum(w, 0)
    tl.store(out_ptr + row * 512 + d, (tl.sum(o * w[:, None], 0) / tl.where(tot > 0, tot, 1.0))
             .to(tl.bfloat16))


def mla_attention(q, cache, block_table, totals, scale, n_splits, o_part, lse_part, out,
                  block_h=16, block_n=32, num_warps=4, num_stages=2):
    """q bf16 [B, S, H, 576], cache bf16 [pages, page_size, 576] (contiguous), totals int32
    [B] (the rows each request has, the S drafts included); out bf16 [B, S, H, 512]
    (contiguous); o_part fp32 [B S H, n_splits, 512], lse_part fp32 [B S H, n_splits]."""
    bsz, s, h, _ = q.shape
    grid = (bsz, triton.cdiv(s * h, block_h), n_splits)
    _mla_split[grid](q, cache, block_table, totals, o_part, lse_part, scale, h, s, n_splits,
                     q.stride(0), q.stride(1), q.stride(2), cache.stride(0),
                     block_table.stride(0), PAGE=cache.shape[1], BLOCK_H=block_h,
                     BLOCK_N=block_n, num_warps=num_warps, num_stages=num_stages)
    _mla_merge[(bsz * s * h,)](o_part, lse_part, out, n_splits,
                               BLOCK_S=triton.next_power_of_2(n_splits), num_warps=4)
    return out
