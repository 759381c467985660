"""Train every shipped zoo model (4 families x 3 seeds) into induction/zoo/models/.

    python benchmarks/build_zoo.py [--jobs 2] [--seeds 0 1 2] [--families dense grown ...]

Each model trains in its own single-threaded process (two 1-thread jobs give about 1.8x the
throughput of one 2-thread job on this machine's tiny models). Models already present are
skipped, so an interrupted build resumes; finished folders appear atomically (renamed from
``.partial``). Prints a summary table from the cards.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

MODELS = Path(__file__).resolve().parents[1] / "induction" / "zoo" / "models"


def build(family: str, seed: int, dest: Path = MODELS) -> str:
    out = dest / f"{family}-s{seed}"
    if (out / "card.json").exists():
        return f"{out.name}: present"
    tmp = out.with_name(out.name + ".partial")
    code = (
        "from pathlib import Path; from zoo.train import train, zoo_config; "
        f"train(zoo_config({family!r}, {seed}), "
        f"out=Path({str(tmp)!r}), progress=False)"
    )
    log = dest.parent / f"build-{family}-s{seed}.log"
    with open(log, "w") as fh:
        subprocess.run(
            [sys.executable, "-c", code], check=True, stdout=fh, stderr=subprocess.STDOUT
        )
    tmp.rename(out)
    log.unlink()
    return f"{out.name}: trained"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--families", nargs="+", default=["dense", "grown", "looped", "grown12"])
    ap.add_argument("--dest", type=Path, default=MODELS, help="where the model folders go")
    args = ap.parse_args()
    args.dest.mkdir(parents=True, exist_ok=True)
    todo = [(f, s) for s in args.seeds for f in args.families]
    with ThreadPoolExecutor(args.jobs) as pool:
        for line in pool.map(lambda fs: build(*fs, dest=args.dest), todo):
            print(line, flush=True)
    head = ("model", "steps", "formed", "sec", "FLOPs", "vs dense", "d20", "d32", "d50")
    print("{:<12} {:>6} {:>7} {:>7} {:>9} {:>8} {:>6} {:>6} {:>6}".format(*head))
    for card_path in sorted(args.dest.glob("*/card.json")):
        c = json.loads(card_path.read_text())
        print(
            f"{c['name']:<12} {c['steps']:>6} {str(c['formed_at_step']):>7} "
            f"{c['train_seconds']:>7} "
            f"{c['train_flops']:>9.3g} {c['flops_vs_dense']:>8} {c['max_induction_d20']:>6} "
            f"{c['max_induction_d32']:>6} {c['max_induction_d50']:>6}"
        )


if __name__ == "__main__":
    main()
