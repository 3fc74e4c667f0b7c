"""Writing a benchmark's results (no torch needed: the compile and runtime benchmarks use it
too)."""

import json
import os


def write_results(out_dir, stem, text, report=None):
    """Writes ``<stem>.md`` (the table ``text``, newline-terminated) and, with ``report``,
    ``<stem>.json`` into ``out_dir`` (created if missing)."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, stem + ".md"), "w") as f:
        f.write(text if text.endswith("\n") else text + "\n")
    if report is not None:
        with open(os.path.join(out_dir, stem + ".json"), "w") as f:
            json.dump(report, f, indent=1)
