"""The ```python blocks of docs/tutorial.md and docs/language.md run, in order, as one
script per file: kernels in interpreter mode (KILN_INTERPRET=1), compile and AOT steps
for real where the compiler extension is built. ```py blocks are fragments, not run."""

import os
import re
import subprocess
import sys

import pytest

import kiln

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def python_blocks(path):
    with open(path) as f:
        return re.findall(r"^```python\n(.*?)^```", f.read(), re.S | re.M)


@pytest.mark.parametrize("doc", ["tutorial.md", "language.md"])
def test_doc_examples_run(doc, tmp_path):
    blocks = python_blocks(os.path.join(REPO, "docs", doc))
    assert blocks, f"docs/{doc} has no ```python blocks"
    script = tmp_path / (doc.replace(".md", "") + "_examples.py")
    script.write_text("\n\n".join(blocks))
    env = dict(os.environ, KILN_INTERPRET="1", KILN_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(kiln.__file__)),
                                           REPO]))
    r = subprocess.run([sys.executable, str(script)], env=env, cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"docs/{doc} examples failed:\n{r.stdout}\n{r.stderr}"
