"""Plot of a Kimi K3 benchmark run (the JSON of ``bench/kimi_k3/run.py --out DIR``): for every
kernel at T = 16384 (the largest shape for kernels without T: image_preprocess), the achieved
share of the measured copy bandwidth (left) and the speedup over torch.compile of the
reference (right), kiln's targets drawn as lines (85 % of copy bandwidth, 1x torch.compile).
Runs without a GPU:

    pip install -r bench/requirements.txt
    python bench/plot.py bench/results/kimi_k3/README.json
        [-o bench/results/kimi_k3/README.png] [--t 16384]
"""

import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

BW_TARGET, SPEEDUP_TARGET = 0.85, 1.0


def points(report, t):
    """[(kernel, share of copy BW, speedup vs torch.compile or None)], one per kernel: its
    case at T = t, else (kernels timed without T) its largest case by bytes."""
    chosen = {}
    for c in report["cases"]:
        if "error" in c or not c.get("rows"):
            continue
        if c.get("T") is not None and c["T"] != t:
            continue
        prev = chosen.get(c["kernel"])
        if prev is None or (c.get("T") is None and c["bytes"] > prev["bytes"]):
            chosen[c["kernel"]] = c
    out = []
    for name, c in chosen.items():
        by = {r["impl"]: r for r in c["rows"]}
        comp = by.get("torch.compile")
        speed = comp["kiln speedup"] if comp and comp["us"] == comp["us"] else None
        label = name if c.get("T") is not None else f"{name} ({c['shape']})"
        out.append((label, by["kiln"]["of copy BW"], speed))
    return out


def plot(report, path, t=16384):
    pts = points(report, t)
    if not pts:
        raise SystemExit(f"no kernel has a case at T = {t}")
    names = [p[0] for p in pts]
    ys = range(len(pts))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 0.45 * len(pts) + 1.8), sharey=True)
    bw = [p[1] * 100 for p in pts]
    ax1.barh(ys, bw, color=["tab:green" if v >= BW_TARGET * 100 else "tab:orange" for v in bw])
    ax1.axvline(BW_TARGET * 100, color="k", ls="--", lw=1, label=f"{BW_TARGET:.0%} target")
    ax1.set_yticks(list(ys), names)
    ax1.invert_yaxis()
    ax1.set_xlabel("% of measured copy bandwidth")
    ax1.set_xlim(0, max(110, max(bw) + 5))
    for y, v in zip(ys, bw):
        ax1.text(v + 1, y, f"{v:.0f}%", va="center", fontsize=8)
    ax1.legend(loc="lower right", fontsize=8)
    sp = [p[2] if p[2] is not None else 0.0 for p in pts]
    ax2.barh(ys, sp, color=["tab:green" if v >= SPEEDUP_TARGET else "tab:red" for v in sp])
    ax2.axvline(SPEEDUP_TARGET, color="k", ls="--", lw=1)
    ax2.set_xlim(0, max(2.0, max(sp) * 1.15))
    ax2.set_xlabel("speedup vs torch.compile (time of torch.compile / time of kiln)")
    for y, p in zip(ys, pts):
        ax2.text((p[2] or 0.0) + 0.02, y, f"{p[2]:.2f}x" if p[2] else "not timed",
                 va="center", fontsize=8)
    title = (f"kiln Kimi K3 kernels on {report.get('device', '?')}, T = {t}: "
             f"copy bandwidth {report.get('copy GB/s (read+write)', float('nan')):.0f} GB/s")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return pts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("json")
    parser.add_argument("-o", "--out", default=None, help="PNG path (default: the JSON's, .png)")
    parser.add_argument("--t", type=int, default=16384)
    args = parser.parse_args()
    with open(args.json) as f:
        report = json.load(f)
    out = args.out or os.path.splitext(args.json)[0] + ".png"
    for name, bw, sp in plot(report, out, args.t):
        print(f"{name:40s} {bw:7.1%} of copy BW   vs torch.compile "
              f"{'-' if sp is None else f'{sp:.2f}x'}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
