"""How close ``induction ablate``'s first time estimate comes to the time its evaluations
take (issue #45: within 1.5x on the default model and on SmolLM2).

    python benchmarks/estimate_accuracy.py [--runs 2] [--models default smollm2] [--json PATH]

Runs the issue's two commands as a user would, through the command line with ``--no-cache``,
one after another, ``--runs`` times each: ``induction ablate --frac 0.2`` (the default model)
and ``induction ablate smollm2 --task antonyms --n-items 16 --controls 5`` with ``--scores``
from an ``induction scan smollm2 --out`` table written first (the estimate covers the
evaluations, not the ranking scan). Each report's ``meta`` keeps ``first_estimate_seconds``
and ``evaluation_seconds`` (``ablation.run._Estimate``); the ratio is their quotient. Prints
one row per run and writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from induction.store.io import write_json  # noqa: E402

#: The issue's commands (the model's scores are added for SmolLM2).
COMMANDS = {
    "default": ["ablate", "--frac", "0.2"],
    "smollm2": ["ablate", "smollm2", "--task", "antonyms", "--n-items", "16", "--controls", "5"],
}


def _induction(*args: str) -> None:
    cmd = [sys.executable, "-m", "induction.commands.main", *args]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode:
        raise SystemExit(f"{' '.join(args[:2])} failed: {run.stderr.strip().splitlines()[-1:]}")


def measure(name: str, args: list[str], tmp: Path, run: int) -> dict:
    out = tmp / f"{name}-{run}.json"
    _induction(*args, "--no-cache", "--out", str(out))
    meta = json.loads(out.read_text())["meta"]
    first, took = meta.get("first_estimate_seconds"), meta["evaluation_seconds"]
    return {
        "command": "induction " + " ".join(args),
        "run": run,
        "first_estimate_s": first,
        "evaluation_s": took,
        "ratio": round(first / took, 2) if first else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=2, help="runs of each command (default 2)")
    ap.add_argument("--models", nargs="+", default=list(COMMANDS), choices=list(COMMANDS))
    ap.add_argument("--json", type=Path, default=None, help="write the rows here")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for name in args.models:
            cmd = list(COMMANDS[name])
            if name == "smollm2":
                scores = tmp / "smollm2-scan.csv"
                _induction("scan", "smollm2", "--out", str(scores))
                cmd += ["--scores", str(scores)]
            for run in range(args.runs):
                row = measure(name, cmd, tmp, run)
                rows.append(row)
                print(
                    f"{name} run {run}: first estimate {row['first_estimate_s']} s, "
                    f"evaluations {row['evaluation_s']} s, ratio {row['ratio']}x",
                    flush=True,
                )
    if args.json:
        write_json(args.json, {"rows": rows})
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
