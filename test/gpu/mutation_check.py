"""Shows that GPU tests can fail: each entry of MUTATIONS plants a bug in a copy of the kernel
library, runs the tests that must catch it there, and expects them to fail; the same tests pass
on the library as it is. A test that still passes with its bug planted checks less than its
name says.

    python test/gpu/mutation_check.py [--out FILE]

Run from the repository (or the device pack) root, on a GPU machine; it exits 1 unless every
test passes unmutated and fails mutated.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from typing import NamedTuple, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Mutation(NamedTuple):
    what: str
    path: str  # relative to the root, under kernels_dsl/
    old: str  # must occur exactly once
    new: str
    tests: Tuple[str, ...]  # pytest node ids (or -k filters after "::-k ")


MUTATIONS = [
    Mutation("attn_res: the one-program-per-token grid misses the last token",
             "kernels_dsl/kimi_k3/attn_res.py",
             "    if not num_sms or per_sm <= 0:\n        return t\n",
             "    if not num_sms or per_sm <= 0:\n        return t - 1\n",
             ("test/gpu/test_attn_res.py::test_one_program_per_token_matches_persistent",)),
    Mutation("moe_fused_gate: the rank kernel specializes on its row count",
             "kernels_dsl/kimi_k3/moe_fused_gate.py",
             '@kiln.jit(num_warps=4, do_not_specialize=["M", "stride_o", "n_shared", "renorm", '
             '"apply_rsf"])',
             '@kiln.jit(num_warps=4, do_not_specialize=["stride_o", "n_shared", "renorm", '
             '"apply_rsf"])',
             ("test/gpu/test_moe_fused_gate.py::test_new_m_does_not_recompile",)),
    Mutation("mla_output_gate_fp8: the third chunk stores the second chunk's values",
             "kernels_dsl/kimi_k3/mla_output_gate.py",
             "_quant_row_chunk(q_ptr, t, q_s0, offs + 2 * BLOCK, H, y2, s, r)",
             "_quant_row_chunk(q_ptr, t, q_s0, offs + 2 * BLOCK, H, y1, s, r)",
             ("test/gpu/test_fp8_quant.py::test_mla_output_gate_fp8_exact",)),
    Mutation("kv_indices: the many-requests BLOCK drops pages past 4 BLOCK",
             "kernels_dsl/kimi_k3/kv_indices.py",
             "        m = p < pages\n",
             "        m = p < kl.minimum(pages, 4 * BLOCK)\n",
             ("test/gpu/test_kernels_batch2.py::test_kv_indices",)),
]


def run_pytest(root, tests, env):
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
    r = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=1200)
    tail = (r.stdout + r.stderr).strip().splitlines()[-1:] or [""]
    return r.returncode, tail[0]


def check(m: Mutation, env) -> Tuple[bool, str]:
    """(as expected, what happened): the tests pass unmutated and fail with the mutation."""
    rc, tail = run_pytest(ROOT, m.tests, env)
    if rc != 0:
        return False, f"fails unmutated: {tail}"
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.join(ROOT, "kernels_dsl"), os.path.join(tmp, "kernels_dsl"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(os.path.join(ROOT, "test"), os.path.join(tmp, "test"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        target = os.path.join(tmp, m.path)
        with open(target) as f:
            text = f.read()
        if text.count(m.old) != 1:
            return False, f"the mutation's text occurs {text.count(m.old)} times in {m.path}"
        with open(target, "w") as f:
            f.write(text.replace(m.old, m.new))
        menv = dict(env, PYTHONPATH=os.pathsep.join(
            [tmp] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]),
            KILN_CACHE_DIR=os.path.join(tmp, "cache"))
        rc, tail = run_pytest(tmp, m.tests, menv)
    if rc == 1:
        return True, f"fails mutated: {tail}"
    return False, f"mutated: exit {rc}: {tail}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    env = dict(os.environ)
    lines = ["| mutation | tests | as expected | what happened |", "|---|---|---|---|"]
    ok = True
    for m in MUTATIONS:
        good, what = check(m, env)
        ok &= good
        lines.append(f"| {m.what} | {', '.join(t.split('::')[-1] for t in m.tests)} | "
                     f"{'yes' if good else 'NO'} | {what} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
