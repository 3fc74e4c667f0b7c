"""Benchmark: softmax attention written in the DSL (kernels_dsl/common/attention.py) against
torch's SDPA and flashinfer, in one run. Every time is isolated (bench.common.isolated_time_ms:
the L2 flushed, CUDA events around the call alone, median of 31); every implementation is
checked once against an fp32 reference before it is timed.

- Causal flash-attention forward, bf16, D = 128, dense [B, H, T, D] at (B, H, T) = (8, 32,
  4096) and (1, 32, 16384): TFLOP/s with the causal FLOPs 2 * 2 * B * H * T^2 * D / 2. Peers:
  SDPA with the flash backend and with the cuDNN backend (``torch.nn.attention.sdpa_kernel``).
  kiln at each key block BN and ring depth of the sweep (the wrapper's default is marked).
- Flash decoding, B = 64, Hq = 64, Hkv = 8, L = 8192 (every request full), D = 128: time in us
  and the bandwidth on the KV bytes (2 * B * L * Hkv * D * 2) as a share of the copy
  bandwidth, the ceiling: a device copy of as many bytes timed the same way (bytes read +
  written / time). Peers: SDPA with ``enable_gqa=True`` (default backend selection), SDPA on
  the GQA-expanded cache, flashinfer's paged batch decode if importable (else a note). kiln
  (the GQA group padded to 64 rows, wgmma) at each ring of the sweep.

    python bench/attention/run.py [--out DIR] [--only fwd|decode]
"""

import argparse
import dataclasses
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

FWD_SHAPES = [(8, 32, 4096, 128), (1, 32, 16384, 128)]
FWD_SWEEP = ((64, 2), (64, 3), (128, 2))  # kiln's (key block, ring stages) at D = 128
DECODE_SHAPE = (64, 64, 8, 8192, 128)  # B, Hq, Hkv, L, D
# kiln's (warp-specialized, ring stages, programs an SM) of the decode at BN = 64
DECODE_SWEEP = ((False, 2, 2), (False, 3, 1), (True, 3, 1), (True, 4, 1))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=None, help="folder for bench_attention.{md,json}")
    parser.add_argument("--only", choices=("fwd", "decode"), default=None)
    return parser.parse_args(argv)


def causal_flops(b, h, t, d):
    return 2 * 2 * b * h * t * t * d / 2


def kv_bytes(b, hkv, seq, d):
    return 2 * b * seq * hkv * d * 2


def _check(name, out, ref, v):
    """The tolerance of bf16 attention (test/gpu/test_attention.py)."""
    import torch

    err = (out.float() - ref).abs()
    bound = 2.0**-8 * v.float().abs().max() + 2.0**-8 * ref.abs()
    if torch.isnan(out).any() or not (err <= bound).all():
        raise AssertionError(f"{name}: max error {err.max().item():.3g} beyond the bf16 bound")


def bench_fwd(rows, notes):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from bench.common import isolated_time_ms
    from kernels_dsl.common import attention

    F = torch.nn.functional
    for b, h, t, d in FWD_SHAPES:
        torch.manual_seed(0)
        q, k, v = (torch.randn(b, h, t, d, device="cuda", dtype=torch.bfloat16)
                   for _ in range(3))
        # the fp32 reference on a slice (batch 0, two heads): [2, T, T] fp32 scores
        sl = (slice(0, 1), slice(0, 2))
        ref = F.scaled_dot_product_attention(q[sl].float(), k[sl].float(), v[sl].float(),
                                             is_causal=True)
        impls = {}
        for bn, stages in FWD_SWEEP:
            s = dataclasses.replace(attention.SETTINGS, fwd_block_n_d128=bn, fwd_stages=stages)
            out = torch.empty_like(q)
            label = (f"kiln (BM 128, BN {bn}, {stages} stages)"
                     + (" default" if s == attention.SETTINGS else ""))
            impls[label] = (lambda x, s=s, out=out: attention.flash_attn(*x, out=out,
                                                                           settings=s))
        for label, backend in (("SDPA flash", SDPBackend.FLASH_ATTENTION),
                               ("SDPA cuDNN", SDPBackend.CUDNN_ATTENTION)):
            def sdpa(x, backend=backend):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(*x, is_causal=True)
            impls[label] = sdpa
        flops = causal_flops(b, h, t, d)
        for label, fn in impls.items():
            try:
                _check(label, fn((q, k, v))[sl], ref, v[sl])
                ms = isolated_time_ms(fn, [(q, k, v)])
            except Exception as e:  # a backend this build lacks: a note, not a failure
                notes.append(f"fwd {b}x{h}x{t}x{d} {label}: {type(e).__name__}: {e}")
                continue
            rows.append({"op": "causal fwd", "shape": [b, h, t, d], "impl": label,
                         "ms": ms, "TFLOP/s": flops / ms / 1e9})
        del q, k, v, ref
        torch.cuda.empty_cache()


def bench_decode(rows, notes):
    import torch

    from bench.common import isolated_time_ms
    from kernels_dsl.common import attention

    F = torch.nn.functional
    b, hq, hkv, seq, d = DECODE_SHAPE
    group = hq // hkv
    torch.manual_seed(0)
    q = torch.randn(b, hq, d, device="cuda", dtype=torch.bfloat16)
    kc, vc = (torch.randn(b, seq, hkv, d, device="cuda", dtype=torch.bfloat16)
              for _ in range(2))
    lengths = torch.full((b,), seq, dtype=torch.int32, device="cuda")
    nbytes = kv_bytes(b, hkv, seq, d)
    # the ceiling: a device copy of as many bytes, timed the same way
    src = torch.empty(nbytes // 2, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    copy_ms = isolated_time_ms(lambda x: x[1].copy_(x[0]), [(src, dst)])
    copy_gbs = 2 * nbytes / copy_ms / 1e6
    del src, dst
    # the fp32 reference on 8 requests
    sel = slice(0, 8)
    k4 = kc[sel].transpose(1, 2).float().repeat_interleave(group, dim=1)
    v4 = vc[sel].transpose(1, 2).float().repeat_interleave(group, dim=1)
    ref = F.scaled_dot_product_attention(q[sel, :, None].float(), k4, v4)[:, :, 0]
    del k4, v4
    kt, vt = kc.transpose(1, 2), vc.transpose(1, 2)  # [B, Hkv, L, D] views, as SDPA takes
    impls = {}
    for ws, stages, per_sm in DECODE_SWEEP:
        s = dataclasses.replace(attention.SETTINGS, decode_warp_specialize=ws,
                                decode_stages=stages, decode_programs_per_sm=per_sm)
        out = torch.empty_like(q)
        label = (f"kiln ({stages} stages, {'a producer warpgroup' if ws else 'one warpgroup'}"
                 f", {per_sm} a SM)" + (" default" if s == attention.SETTINGS else ""))
        impls[label] = (lambda x, s=s, out=out: attention.flash_decode(*x, lengths, out=out,
                                                                         settings=s))
    impls["SDPA enable_gqa"] = lambda x: F.scaled_dot_product_attention(
        x[0][:, :, None], kt, vt, enable_gqa=True)[:, :, 0]
    ke, ve = (x.repeat_interleave(group, dim=1).contiguous() for x in (kt, vt))
    impls["SDPA expanded GQA (cache repeated beforehand, 8x the bytes)"] = (
        lambda x: F.scaled_dot_product_attention(x[0][:, :, None], ke, ve)[:, :, 0])
    try:
        import flashinfer

        page = 16
        workspace = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
        wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(workspace, "NHD")
        pages = b * seq // page
        indptr = torch.arange(b + 1, dtype=torch.int32, device="cuda") * (seq // page)
        indices = torch.arange(pages, dtype=torch.int32, device="cuda")
        last = torch.full((b,), page, dtype=torch.int32, device="cuda")
        wrapper.plan(indptr, indices, last, hq, hkv, d, page, q_data_type=torch.bfloat16,
                     kv_data_type=torch.bfloat16)
        paged = (kc.view(pages, page, hkv, d), vc.view(pages, page, hkv, d))
        impls["flashinfer batch decode (pages of 16)"] = lambda x: wrapper.run(x[0], paged)
    except ImportError:
        notes.append("flashinfer is not importable: its decode row is skipped")
    except Exception as e:
        notes.append(f"flashinfer decode: {type(e).__name__}: {e}")
    for label, fn in impls.items():
        try:
            _check(label, fn((q, kc, vc))[sel], ref, vc[sel])
            ms = isolated_time_ms(fn, [(q, kc, vc)])
        except Exception as e:
            notes.append(f"decode {label}: {type(e).__name__}: {e}")
            continue
        gbs = nbytes / ms / 1e6
        rows.append({"op": "decode", "shape": list(DECODE_SHAPE), "impl": label, "ms": ms,
                     "KV GB/s": gbs, "of copy BW": gbs / copy_gbs})
    return {"copy ms": copy_ms, "copy GB/s": copy_gbs, "KV bytes": nbytes}


def main(argv=None):
    args = parse_args(argv)
    import torch

    name = torch.cuda.get_device_name()
    rows, notes, copy = [], [], None
    if args.only in (None, "fwd"):
        bench_fwd(rows, notes)
    if args.only in (None, "decode"):
        copy = bench_decode(rows, notes)
    lines = [f"# Attention on {name} (isolated: L2 flushed, median of 31)", ""]
    fwd = [r for r in rows if r["op"] == "causal fwd"]
    if fwd:
        lines += ["Causal forward, bf16, dense [B, H, T, D]; FLOPs 2*2*B*H*T^2*D/2:", "",
                  "| B x H x T x D | impl | time (ms) | TFLOP/s | vs kiln default |",
                  "|---|---|---|---|---|"]
        for shape in FWD_SHAPES:
            sel = [r for r in fwd if tuple(r["shape"]) == shape]
            base = next((r["ms"] for r in sel if r["impl"].endswith("default")), None)
            for r in sel:
                ratio = f"{r['ms'] / base:.2f}x" if base else "-"
                lines.append(f"| {'x'.join(map(str, shape))} | {r['impl']} | {r['ms']:.3f} | "
                             f"{r['TFLOP/s']:.0f} | {ratio} |")
    dec = [r for r in rows if r["op"] == "decode"]
    if dec:
        lines += ["", f"Decode, B x Hq x Hkv x L x D = {'x'.join(map(str, DECODE_SHAPE))}; KV "
                  f"bytes {copy['KV bytes'] / 1e9:.2f} GB; the ceiling, a copy of as many "
                  f"bytes: {copy['copy ms'] * 1e3:.0f} us, {copy['copy GB/s']:.0f} GB/s "
                  "(read + written):", "",
                  "| impl | time (us) | KV GB/s | of copy BW |", "|---|---|---|---|"]
        for r in dec:
            lines.append(f"| {r['impl']} | {r['ms'] * 1e3:.1f} | {r['KV GB/s']:.0f} | "
                         f"{r['of copy BW']:.1%} |")
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    text = "\n".join(lines)
    print(text)
    if args.out:
        from bench.report import write_results

        write_results(args.out, "bench_attention", text,
                      {"device": name, "rows": rows, "copy": copy, "notes": notes})


if __name__ == "__main__":
    main()
