"""MLA concatenations, bit-exact ``torch.cat`` semantics.

``concat_mla_k(k, k_nope, k_rope)``: in place into k [T, H, 192],
    k[t, h, :128] = k_nope[t, h, :]      k_nope [T, H, 128] (strided: usually a slice)
    k[t, h, 128:] = k_rope[t, 0, :]      k_rope [T, 1, 64], broadcast over the H heads.

``concat_mla_absorb_q(a, b, out)``: out[d0, d1, :] = cat(a[d0, d1, :A], b[d0, d1, :B]) — the
absorbed MLA query [T, H, 512 + 64].

bf16 only (any 16-bit dtype would move the same bits; the contract is bf16). Every input may be
strided in its two leading dimensions; the last dimension must be contiguous. Each program
copies ROWS (t, h) rows as [ROWS, width] tiles. T = 0 (or H = 0) launches nothing. The
kernels are programmatic dependent launches (concat_mla_k only for grids of at most
Settings.k_pdl_programs_per_sm programs an SM): each waits for the previous grid
(``griddepcontrol.wait``) before its loads and lets the next one launch after its stores.
The bundle holds K3's widths for 16-byte aligned tensors and strides and, for every other
input, ``concat_mla_k_generic`` and ``concat_mla_absorb_q_generic`` (A and B at run time).

Specification: docs/kernels/mla_cache.md
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import kiln
import kiln.language as kl
from kiln.aot import Spec

from . import _launch as L

NOPE, ROPE = 128, 64


@kiln.jit
def _program_rows(rows, D1, ROWS: kl.constexpr):
    """The program's ROWS rows of the rows = d0 x D1 (t, h) rows: ([ROWS, 1] valid, [ROWS] i,
    [ROWS] j) of row i * D1 + j."""
    r = kl.program_id(0) * ROWS + kl.arange(0, ROWS)
    return (r < rows)[:, None], r // D1, r % D1


@kiln.jit(num_warps=4)
def concat_mla_k_kernel(k_ptr, nope_ptr, rope_ptr, rows, H, k_s0, k_s1, nope_s0, nope_s1,
                        rope_s0, ROWS: kl.constexpr, NOPE_DIM: kl.constexpr,
                        ROPE_DIM: kl.constexpr, PDL: kl.constexpr = False):
    valid, t, h = _program_rows(rows, H, ROWS)
    cn = kl.arange(0, NOPE_DIM)[None, :]
    cr = kl.arange(0, ROPE_DIM)[None, :]
    if PDL:
        kl.pdl_wait()  # k_nope and k_rope may come from the previous kernels
    nope = kl.load(nope_ptr + (t * nope_s0 + h * nope_s1)[:, None] + cn, mask=valid, other=0.0)
    rope = kl.load(rope_ptr + (t * rope_s0)[:, None] + cr, mask=valid, other=0.0)
    dst = k_ptr + (t * k_s0 + h * k_s1)[:, None]
    kl.store(dst + cn, nope, mask=valid)
    kl.store(dst + NOPE_DIM + cr, rope, mask=valid)
    if PDL:
        kl.pdl_launch_dependents()


@kiln.jit(num_warps=4)
def concat_mla_absorb_q_kernel(a_ptr, b_ptr, out_ptr, rows, D1, a_s0, a_s1, b_s0, b_s1, o_s0,
                               o_s1, ROWS: kl.constexpr, A: kl.constexpr, B: kl.constexpr,
                               BLOCK_A: kl.constexpr, BLOCK_B: kl.constexpr):
    valid, i, j = _program_rows(rows, D1, ROWS)
    ca = kl.arange(0, BLOCK_A)[None, :]
    cb = kl.arange(0, BLOCK_B)[None, :]
    ma = valid & (ca < A) if A != BLOCK_A else valid
    mb = valid & (cb < B) if B != BLOCK_B else valid
    kl.pdl_wait()  # a and b may come from the previous kernels
    va = kl.load(a_ptr + (i * a_s0 + j * a_s1)[:, None] + ca, mask=ma, other=0.0)
    vb = kl.load(b_ptr + (i * b_s0 + j * b_s1)[:, None] + cb, mask=mb, other=0.0)
    dst = out_ptr + (i * o_s0 + j * o_s1)[:, None]
    kl.store(dst + ca, va, mask=ma)
    kl.store(dst + A + cb, vb, mask=mb)
    kl.pdl_launch_dependents()


@kiln.jit
def _copy_columns(src, dst, valid, width, BLOCK: kl.constexpr):
    """Copies ``width`` columns from the [ROWS, 1] row pointers ``src`` to ``dst`` (rows
    ``valid``), BLOCK columns a loop iteration."""
    for c0 in range(0, width, BLOCK):
        c = c0 + kl.arange(0, BLOCK)[None, :]
        m = valid & (c < width)
        kl.store(dst + c, kl.load(src + c, mask=m, other=0.0), mask=m)


@kiln.jit(num_warps=4)
def concat_mla_absorb_q_generic_kernel(a_ptr, b_ptr, out_ptr, rows, D1, a_s0, a_s1, b_s0, b_s1,
                                       o_s0, o_s1, A, B, ROWS: kl.constexpr,
                                       BLOCK: kl.constexpr):
    """``concat_mla_absorb_q_kernel`` for any widths A and B (runtime values): each part
    copied BLOCK columns a loop iteration, a's then b's."""
    valid, i, j = _program_rows(rows, D1, ROWS)
    dst = out_ptr + (i * o_s0 + j * o_s1)[:, None]
    kl.pdl_wait()  # a and b may come from the previous kernels
    _copy_columns(a_ptr + (i * a_s0 + j * a_s1)[:, None], dst, valid, A, BLOCK)
    _copy_columns(b_ptr + (i * b_s0 + j * b_s1)[:, None], dst + A, valid, B, BLOCK)
    kl.pdl_launch_dependents()


@dataclasses.dataclass(frozen=True)
class Settings:
    """concat_mla_k's and concat_mla_absorb_q's tuning; measured in
    bench/results/kimi_k3/mla_cache.md."""
    k_rows: int = 4  # concat_mla_k: [4, 128] + [4, 64] ...
    k_warps: int = 1  # ... on one warp
    k_pdl_programs_per_sm: int = 4  # a PDL launch up to this many programs an SM (below)
    q_rows: int = 4  # absorb_q: [4, 512] + [4, 64] on 4 warps (scaled for other widths)
    q_warps: int = 4


SETTINGS = Settings()


def k_pdl(programs: int, num_sms: Optional[int], settings: Settings = SETTINGS) -> bool:
    """Whether concat_mla_k's launch of ``programs`` programs is a PDL launch: with an SM
    count, and at most k_pdl_programs_per_sm x SMs programs (past that, the next grid's
    programs launched early wait in the SMs' slots that this grid's programs need)."""
    return bool(num_sms and programs <= settings.k_pdl_programs_per_sm * num_sms)


def k_launch_config(programs: int, num_sms: Optional[int], settings: Settings = SETTINGS
                    ) -> tuple:
    """(constexprs, num_warps) of concat_mla_k with ``programs`` programs."""
    return ({"ROWS": settings.k_rows, "NOPE_DIM": NOPE, "ROPE_DIM": ROPE,
             "PDL": k_pdl(programs, num_sms, settings)}, settings.k_warps)


def q_launch_config(na: int, nb: int, settings: Settings = SETTINGS) -> tuple:
    """(constexprs, num_warps) of concat_mla_absorb_q for widths A = na, B = nb: q_rows
    rows when the wider part is 512 wide (fewer or more rows for a wider or narrower one, 1 to
    64), so that neither tile holds more than q_rows x 512 elements (16 a thread on 4 warps)
    unless one row is wider."""
    block_a, block_b = _next_pow2(na), _next_pow2(nb)
    rows = max(1, min(settings.q_rows * 512 // max(block_a, block_b), 64))
    return ({"ROWS": rows, "A": na, "B": nb,
             "BLOCK_A": block_a, "BLOCK_B": block_b}, settings.q_warps)


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


_K_SIG = {"k_ptr": "*bf16", "nope_ptr": "*bf16", "rope_ptr": "*bf16", "rows": "i32", "H": "i32",
          "k_s0": "i32", "k_s1": "i32", "nope_s0": "i32", "nope_s1": "i32", "rope_s0": "i32"}
_Q_SIG = {"a_ptr": "*bf16", "b_ptr": "*bf16", "out_ptr": "*bf16", "rows": "i32", "D1": "i32",
          "a_s0": "i32", "a_s1": "i32", "b_s0": "i32", "b_s1": "i32", "o_s0": "i32",
          "o_s1": "i32"}

#: the bundle's concat_mla_k for tensors at any address and any strides (the fast one
#: assumes 16-byte aligned tensors and strides multiples of 16 elements)
K_GENERIC = "concat_mla_k_generic"
#: the bundle's concat_mla_absorb_q for every A, B, address and stride
Q_GENERIC = "concat_mla_absorb_q_generic"
#: the generic absorb_q's tile: [16, 128], 16 bf16 a thread on 4 warps
Q_GENERIC_CONSTEXPRS = {"ROWS": 16, "BLOCK": 128}

AOT_SPECIALIZATIONS = [
    # K3: k_nope is a slice of the kv_b projection [T, H, 128 + 128] (strides multiples of
    # 16); a PDL launch for small grids, a plain one for large (k_pdl). The generic kernel
    # (the same without the alignment assumptions) for the rest.
    *[Spec(concat_mla_k_kernel, name=name, signature=_K_SIG,
           constexprs=k_launch_config(programs, 1)[0], divisibility=div,
           num_warps=k_launch_config(programs, 1)[1])
      for name, div in (("concat_mla_k", ["k_ptr", "nope_ptr", "rope_ptr", "k_s0", "k_s1",
                                          "nope_s0", "nope_s1", "rope_s0"]), (K_GENERIC, ()))
      for programs in (1, 1 << 30)],  # on one SM: a PDL launch, a plain one
    # Absorbed query [T, H, 512 + 64]; the generic kernel for other widths and strides.
    Spec(concat_mla_absorb_q_kernel, name="concat_mla_absorb_q", signature=_Q_SIG,
         constexprs=q_launch_config(512, 64)[0],
         divisibility=["a_ptr", "b_ptr", "out_ptr", "a_s0", "a_s1", "b_s0", "b_s1", "o_s0",
                       "o_s1"], num_warps=q_launch_config(512, 64)[1]),
    Spec(concat_mla_absorb_q_generic_kernel, name=Q_GENERIC,
         signature=dict(_Q_SIG, A="i32", B="i32"), constexprs=Q_GENERIC_CONSTEXPRS,
         num_warps=concat_mla_absorb_q_generic_kernel.num_warps),
]


def _check_extent(op: str, what: str, t: Any) -> None:
    if all(s > 0 for s in L.shape(t)):
        last = sum((n - 1) * s for n, s in zip(L.shape(t), L.strides(t)))
        L.check_int32_extent(op, f"the largest element offset of {what}", last + 1)


def concat_mla_k(k: Any, k_nope: Any, k_rope: Any, *, settings: Settings = SETTINGS) -> Any:
    """Writes ``cat(k_nope, k_rope broadcast over heads, dim=-1)`` into ``k`` [T, H, 192]
    (bf16; k_nope [T, H, 128], k_rope [T, 1, 64]); returns k. Checks raise before launch."""
    op = "concat_mla_k"
    for what, t in (("k", k), ("k_nope", k_nope), ("k_rope", k_rope)):
        L.check_dtype(op, what, t, ("bfloat16",))
    n_t, h, _ = L.check_shape(op, "k", k, (None, None, NOPE + ROPE))
    L.check_shape(op, "k_nope", k_nope, (n_t, h, NOPE))
    L.check_shape(op, "k_rope", k_rope, (n_t, 1, ROPE))
    for what, t in (("k", k), ("k_nope", k_nope), ("k_rope", k_rope)):
        L.check_inner_contiguous(op, what, t)
        _check_extent(op, what, t)
    L.check_same_device(op, ("k", k), ("k_nope", k_nope), ("k_rope", k_rope))
    rows = n_t * h
    L.check_int32_extent(op, "T * H", rows + settings.k_rows)
    ks, ns, rs = L.strides(k), L.strides(k_nope), L.strides(k_rope)
    args = (k, k_nope, k_rope, rows, max(h, 1), ks[0], ks[1], ns[0], ns[1], rs[0])
    programs = (rows + settings.k_rows - 1) // settings.k_rows
    constexprs, num_warps = k_launch_config(programs, L.num_sms(k), settings)
    launch = L.Launch(concat_mla_k_kernel, "concat_mla_k", (programs,), args, constexprs,
                      num_warps)
    L.launch(*launch, generic=launch._replace(name=K_GENERIC))
    return k


def concat_mla_absorb_q(a: Any, b: Any, out: Optional[Any] = None, *,
                        settings: Settings = SETTINGS) -> Any:
    """``out[d0, d1, :] = cat(a[d0, d1, :], b[d0, d1, :])`` for bf16 a [d0, d1, A] and
    b [d0, d1, B] (strided leading dims); out [d0, d1, A + B] is allocated if None.
    Checks raise before launch."""
    op = "concat_mla_absorb_q"
    L.check_dtype(op, "a", a, ("bfloat16",))
    L.check_dtype(op, "b", b, ("bfloat16",))
    d0, d1, na = L.check_shape(op, "a", a, (None, None, None))
    _, _, nb = L.check_shape(op, "b", b, (d0, d1, None))
    if not (0 < na <= 4096 and 0 < nb <= 4096):
        raise ValueError(f"{op}: the last dimensions must be in [1, 4096], got A = {na}, "
                         f"B = {nb}")
    if out is None:
        import torch

        out = torch.empty((d0, d1, na + nb), dtype=torch.bfloat16, device=a.device)
    else:
        L.check_dtype(op, "out", out, ("bfloat16",))
        L.check_shape(op, "out", out, (d0, d1, na + nb))
    for what, t in (("a", a), ("b", b), ("out", out)):
        L.check_inner_contiguous(op, what, t)
        _check_extent(op, what, t)
    L.check_same_device(op, ("a", a), ("b", b), ("out", out))
    rows = d0 * d1
    sa, sb, so = L.strides(a), L.strides(b), L.strides(out)
    constexprs, num_warps = q_launch_config(na, nb, settings)
    q_rows, g_rows = constexprs["ROWS"], Q_GENERIC_CONSTEXPRS["ROWS"]
    L.check_int32_extent(op, "d0 * d1", rows + max(q_rows, g_rows))
    args = (a, b, out, rows, max(d1, 1), sa[0], sa[1], sb[0], sb[1], so[0], so[1])
    L.launch(concat_mla_absorb_q_kernel, "concat_mla_absorb_q", ((rows + q_rows - 1) // q_rows,),
             args, constexprs, num_warps,
             generic=L.Launch(concat_mla_absorb_q_generic_kernel, Q_GENERIC,
                              ((rows + g_rows - 1) // g_rows,), args + (na, nb),
                              Q_GENERIC_CONSTEXPRS,
                              concat_mla_absorb_q_generic_kernel.num_warps))
    return out
