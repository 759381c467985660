"""The strongest induction head at several distances before a grown model's first growth:
whether a head had formed at short range where round 4's gate, read at distance 32, sees none
(docs/replication.md, "What a dry run of the reading found").

    python benchmarks/pre_growth_heads.py grown8rte-s0 /work/runs/round4/models/grown8rte-s1

Each model is a zoo name or a model folder whose ``checkpoints/`` still holds the series
(round 4 drops it after the sweep for seeds >= 1, so a run folder is read while it trains).
The first growth is the lowest ``step-N-pre`` checkpoint. Every checkpoint up to it is scanned
with :func:`induction.induction_scores` (stripe score, ``[BOS] + r + r``, ``len(r)`` = the
distance) over ``--prompt-seeds`` prompt seeds of ``--batch`` prompts. Writes, atomically,
``<out-dir>/<model>.csv``: one row per checkpoint, distance and head, with the head's mean
score over prompt seeds, their sd and the scan's 95% interval. It then prints the strongest
head of each checkpoint and distance.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from induction.errors import InputError  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "pre_growth"
DISTANCES = (8, 16, 24, 32)
_CHECKPOINT = re.compile(r"step-(\d+)(-pre)?")


def before_first_growth(folder: Path) -> list[tuple[int, Path]]:
    """``(step, checkpoint)`` for every checkpoint up to the first growth, in step order; the
    first growth's own is its ``-pre`` checkpoint (``step-N`` at that step is after it)."""
    found = {}
    for ck in (folder / "checkpoints").glob("step-*"):
        m = _CHECKPOINT.fullmatch(ck.name)
        if m and (ck / "config.json").is_file():
            found[ck.name] = (int(m[1]), bool(m[2]))
    pre = [step for step, is_pre in found.values() if is_pre]
    if not pre:
        raise InputError(
            f"{folder} holds no step-N-pre checkpoint; pass a grown model whose checkpoint "
            "series is still there"
        )
    first = min(pre)
    keep = [
        (step, folder / "checkpoints" / name)
        for name, (step, is_pre) in found.items()
        if step < first or (step == first and is_pre)
    ]
    return sorted(keep)


def scan(folder: Path, name: str, distances, prompt_seeds: int, batch: int):
    """One row per checkpoint, distance and head."""
    import pandas as pd

    from induction import induction_scores
    from induction.models.loading import load_model

    rows = []
    for step, ck in before_first_growth(folder):
        loaded = load_model(str(ck), device="cpu")
        for distance in distances:
            df = induction_scores(
                loaded, seq_len=distance, batch=batch, seeds=prompt_seeds,
                scores="induction", progress=False,
            )  # fmt: skip
            for _, r in df.iterrows():
                rows.append({
                    "model": name, "checkpoint": ck.name, "step": step, "distance": distance,
                    "layer": int(r.layer), "head": int(r["head"]), "induction": r.induction,
                    "std": r.induction_std, "ci_lo": r.induction_ci_lo,
                    "ci_hi": r.induction_ci_hi,
                })  # fmt: skip
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", help="zoo names or model folders with checkpoints/")
    ap.add_argument("--distances", type=int, nargs="+", default=list(DISTANCES))
    ap.add_argument("--prompt-seeds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=32, help="prompts per prompt seed")
    ap.add_argument("--out-dir", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if min(args.distances) < 2 or args.prompt_seeds < 2 or args.batch < 1:
        raise InputError("--distances must be >= 2, --prompt-seeds >= 2 and --batch >= 1")
    from induction.models.registry import folder_or_zoo_path
    from induction.store.io import atomic_write

    for spec in args.models:
        name, folder = folder_or_zoo_path(spec)
        table = scan(folder, name, args.distances, args.prompt_seeds, args.batch)
        path = args.out_dir / f"{name}.csv"
        args.out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(path, lambda f, t=table: t.to_csv(f, index=False, float_format="%.4f"))
        top = table.loc[table.groupby(["checkpoint", "distance"])["induction"].idxmax()]
        for _, r in top.sort_values(["step", "distance"]).iterrows():
            print(
                f"{name} {r.checkpoint:>13} d{r.distance:<3} L{r.layer}H{r['head']} "
                f"{r.induction:.3f} ± {r['std']:.3f} [{r.ci_lo:.3f}, {r.ci_hi:.3f}]"
            )
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
