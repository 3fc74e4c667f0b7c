"""bench/plot.py on a synthetic report of bench/kimi_k3/run.py's JSON schema (no GPU): one
point per kernel at the chosen T (the largest case for kernels without T), failed cases and
untimed torch.compile peers left out or marked, and a PNG written. Skipped without
matplotlib (bench/requirements.txt)."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, ROOT)

from bench import plot  # noqa: E402

COPY = 4000.0


def row(impl, us, nbytes, kiln_us):
    return {"impl": impl, "us": us, "GB/s": nbytes / us / 1e3,
            "of copy BW": nbytes / us / 1e3 / COPY, "kiln speedup": us / kiln_us}


def case(kernel, t, nbytes, kiln_us, eager_us, compile_us=None, shape="[x]"):
    rows = [row("kiln", kiln_us, nbytes, kiln_us), row("torch eager", eager_us, nbytes, kiln_us)]
    if compile_us is not None:
        rows.append(row("torch.compile", compile_us, nbytes, kiln_us))
    c = {"kernel": kernel, "T": t, "shape": shape, "bytes": nbytes, "rows": rows}
    if t is not None and t <= 64:
        c["kiln - empty kiln launch (us)"] = kiln_us - 0.9
    return c


def report():
    cases = []
    for t in (1, 64, 4096, 16384):
        cases.append(case("rmsnorm", t, 4 * t * 7168, 0.25 * t + 2, 0.3 * t + 3, 0.24 * t + 2))
        cases.append(case("quant_mxfp4", t, 3 * t * 7168, 0.05 * t + 3, t + 60, 0.044 * t + 3))
    cases.append(case("kv_indices", 16384, 1 << 20, 5.0, 30.0))  # no torch.compile row
    cases.append({"kernel": "moe_fused_gate", "T": 16384, "error": "ImportError: x"})
    cases.append(case("image_preprocess", None, 8_000_000, 12.0, 40.0, 10.0, "small"))
    cases.append(case("image_preprocess", None, 28_000_000, 84.0, 170.0, 68.0, "large"))
    return {"device": "NVIDIA H200", "copy GB/s (read+write)": COPY,
            "empty kiln kernel (us)": 0.9, "empty torch op (us)": 1.1, "cases": cases}


def test_points_pick_one_case_per_kernel():
    pts = {name: (bw, sp) for name, bw, sp in plot.points(report(), 16384)}
    assert set(pts) == {"rmsnorm", "quant_mxfp4", "kv_indices", "image_preprocess (large)"}
    bw, sp = pts["rmsnorm"]
    assert bw == pytest.approx(4 * 16384 * 7168 / (0.25 * 16384 + 2) / 1e3 / COPY)
    assert sp == pytest.approx((0.24 * 16384 + 2) / (0.25 * 16384 + 2))
    assert pts["kv_indices"][1] is None
    assert pts["image_preprocess (large)"][1] == pytest.approx(68.0 / 84.0)


def test_cli_writes_a_png(tmp_path):
    path = tmp_path / "bench_kimi_k3.json"
    path.write_text(json.dumps(report()))
    out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "plot.py"), str(path)],
                         capture_output=True, text=True, check=True).stdout
    png = tmp_path / "bench_kimi_k3.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "wrote" in out and "quant_mxfp4" in out


def test_no_case_at_t_is_an_error():
    r = report()
    r["cases"] = [c for c in r["cases"] if c.get("T") is not None]
    with pytest.raises(SystemExit):
        plot.plot(r, os.devnull, t=7)
