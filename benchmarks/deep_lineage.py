"""Do the strongest heads of a multi-stage grown model descend from few initial heads?

    python benchmarks/deep_lineage.py                      # shipped grown12-s* and grown-s*
    python benchmarks/deep_lineage.py zoo/grown12-s0 --top 12 --json out.json

The source's claim (Kapl et al. 2025, arXiv 2512.08819; docs/research.md): in a 3B LIDAS
model, 10 of the 12 strongest induction heads descend from two ancestors in the initial
4-layer network. After the zoo's single 4 -> 8 growth every initial head has exactly two
descendants; after two LIDAS stages (4 -> 8 -> 12,
``induction zoo train grown --grow-at 0.25,0.5 --steps 2200``) every one has three, so one
ancestor's descendants can fill more of the top. For each model, with the public APIs
(:func:`induction.scores.scan.induction_scores`, :func:`lineage.trace`):

- the heads >= 0.4 (induction heads), their distinct initial ancestors and the most strong
  heads any one ancestor has (the source's claim needs about 5);
- the top ``n`` heads by induction score (3 prompt seeds x 32 prompts, repeat length 32), for
  each ``n`` of ``--top`` (default 12, the source's, and 7, the zoo's top 20% of 32 heads);
- how many distinct initial heads and initial layers they descend from, the fewest possible
  (``ceil(n / descendants per ancestor)``) and the mean for ``n`` random heads (Monte Carlo,
  ``--samples`` draws, seed 0; :func:`replication.ancestor_counts`);
- the lineage summary sentence (the fewest ancestors holding 80% of the top heads) and how
  many of those ancestors were already induction heads (>= 0.4) in the shipped pre-growth
  network (``initial/``), scanned at its own repeat length;
- for a model grown more than once, each induction head's parent in the network the last
  growth copied (shipped as ``stage<k>/``): the parent's own score there and the scores of
  all the parent's copies in the final model.

Prints a markdown table; ``--json`` also writes every figure (atomically).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from replication import ancestor_counts  # noqa: E402

from lineage.log import duplication_log

MODELS = Path(__file__).resolve().parents[1] / "induction" / "zoo" / "models"
THRESHOLD = 0.4  # an induction head, by convention (docs/research.md)


def default_models() -> list[Path]:
    found = sorted(MODELS.glob("grown12-s*")) + sorted(MODELS.glob("grown-s*"))
    return [p for p in found if (p / "config.json").is_file()]


def measure(folder: Path, tops: list[int], samples: int) -> list[dict]:
    import lineage
    from induction import load_model
    from induction.scores.scan import induction_scores

    loaded = load_model(str(folder), device="cpu")
    card = loaded.card or {}
    scores = induction_scores(loaded, scores="induction", progress=False)
    ranked = scores.sort_values(["induction", "layer", "head"], ascending=[False, True, True])
    strong = [(int(r.layer), int(r.head)) for r in ranked.itertuples() if r.induction >= THRESHOLD]
    stage_view = _previous_stage(loaded, scores, strong)
    # the shipped initial/ network is scanned once and one trace gives the ancestry; each n is
    # then only a new summary of the same ancestry and scores
    initial_scores = None
    if (folder / "initial" / "config.json").is_file():
        initial_scores = induction_scores(
            load_model(str(folder / "initial"), device="cpu"), scores="induction", progress=False
        )
    traced = lineage.trace(loaded, scores=scores, top=tops[0], initial_scores=initial_scores)
    anc = traced.ancestry
    primary = {
        (int(r.layer), int(r.head)): (int(r.ancestor_layer), int(r.ancestor_head))
        for r in anc[anc["primary"]].itertuples()
    }
    per_ancestor: dict[tuple[int, int], int] = {}
    for h in strong:
        per_ancestor[primary[h]] = per_ancestor.get(primary[h], 0) + 1
    rows = []
    for n in tops:
        s = lineage.summarize(anc, scores, top=n, initial_scores=initial_scores)
        top = [(int(r.layer), int(r.head)) for r in s.top.itertuples()]
        counts = ancestor_counts(primary, top, samples)
        headline = s.ancestors[s.ancestors["ancestor"].isin(s.headline_ancestors)]
        was_induction = (
            int(headline["was_induction_head"].fillna(False).astype(bool).sum())
            if "was_induction_head" in headline
            else None
        )
        rows.append(
            {
                "model": folder.name,
                "depths": " -> ".join(map(str, traced.lineage.depths)),
                "growth_steps": [t.step for t in traced.lineage.transitions],
                "formed_at_step": card.get("formed_at_step"),
                "max_induction": float(scores["induction"].max()),
                "heads_above_0.4": len(strong),
                "strong_heads": [f"L{a}H{b}" for a, b in strong],
                "strong_ancestors": sorted(f"L{a}H{b}" for a, b in per_ancestor),
                "max_strong_per_ancestor": max(per_ancestor.values(), default=0),
                "score_at_top_n": float(ranked["induction"].iloc[min(n, len(ranked)) - 1]),
                "top_n": n,
                "top_above_0.4": s.n_top_above,
                **counts,
                "headline_heads": s.headline_heads,
                "headline_ancestors": list(s.headline_ancestors),
                "headline_were_induction": was_induction,
                "sentence": s.sentence,
                **stage_view,
            }
        )
    return rows


def _previous_stage(loaded, scores, strong) -> dict:
    """For a model grown more than once: the strong heads' ancestors in the network the last
    event copied (shipped as ``stage<k>/``), their scores there, and the scores of all their
    copies in the final model (did the pattern survive in one copy or in several?)."""
    import lineage

    log = duplication_log(loaded)
    if log is None or len(log.events) < 2:
        return {}
    stage = len(log.events) - 1
    result = lineage.trace(loaded, scores=scores, top=max(1, len(strong)), stage=stage)
    anc = result.ancestry
    prim = anc[anc["primary"]]
    parent = {
        (int(r.layer), int(r.head)): (int(r.ancestor_layer), int(r.ancestor_head))
        for r in prim.itertuples()
    }
    own = {}
    a = result.summary.ancestors
    if "ancestor_score" in a:
        own = {
            (int(r.ancestor_layer), int(r.ancestor_head)): float(r.ancestor_score)
            for r in a.itertuples()
        }
    score = {(int(r.layer), int(r.head)): float(r.induction) for r in scores.itertuples()}
    rows = []
    for head in strong:
        p = parent[head]
        copies = sorted(h for h, q in parent.items() if q == p)
        rows.append(
            {
                "head": f"L{head[0]}H{head[1]}",
                "score": round(score[head], 3),
                "parent": f"L{p[0]}H{p[1]}",
                "parent_score": round(own[p], 3) if p in own else None,
                "copies": {f"L{h[0]}H{h[1]}": round(score[h], 3) for h in copies},
            }
        )
    return {"previous_stage": stage, "strong_heads_in_previous_stage": rows}


def markdown(rows: list[dict]) -> str:
    head = (
        "| model | layers | heads >= 0.4: ancestors (most per ancestor) | top n (n-th score) | "
        "ancestor heads (fewest, random) | ancestor layers (fewest, random) | "
        "headline: heads from ancestors | headline ancestors already induction heads |\n"
        "|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in rows:
        was = r["headline_were_induction"]
        n_headline = len(r["headline_ancestors"])
        lines.append(
            f"| {r['model']} | {r['depths']} | {len(r['strong_heads'])}: "
            f"{len(r['strong_ancestors'])} ({r['max_strong_per_ancestor']}) | "
            f"{r['top_n']} ({r['score_at_top_n']:.2f}) | "
            f"{r['top_ancestors']} of {r['ancestor_pool']} ({r['min_ancestors']}, "
            f"{r['random_ancestors']:.1f}) | {r['top_layers']} of {r['layer_pool']} "
            f"({r['min_layers']}, {r['random_layers']:.1f}) | {r['headline_heads']} of "
            f"{r['top_n']} from {n_headline} ({', '.join(r['headline_ancestors'])}) | "
            f"{'-' if was is None else f'{was} of {n_headline}'} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*", type=Path, help="grown checkpoint folders")
    ap.add_argument("--top", default="12,7", help="comma-separated numbers of top heads")
    ap.add_argument("--samples", type=int, default=2000, help="random head sets per n")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    import torch

    from induction.errors import InputError
    from induction.models.loading import quiet_libraries

    torch.set_num_threads(1)
    quiet_libraries()
    folders = args.models or default_models()
    if not folders:
        raise SystemExit(
            "error: no grown models found; train one with `induction zoo train grown "
            "--grow-at 0.25,0.5 --steps 2200` and pass its folder"
        )
    try:
        tops = [int(x) for x in args.top.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"error: --top takes integers separated by commas, got {args.top!r}")
    rows = []
    for folder in folders:
        try:
            rows += measure(folder, tops, args.samples)
        except InputError as e:
            raise SystemExit(f"error: {folder}: {e}") from None
        print(f"{folder.name}: {rows[-1]['sentence']}", file=sys.stderr, flush=True)
    rows.sort(key=lambda r: (tops.index(r["top_n"]), r["model"]))
    print(markdown(rows))
    staged = {r["model"]: r for r in rows if r.get("strong_heads_in_previous_stage")}
    if staged:
        print(
            "\n| model | induction head (score) | parent before the last growth (its score) "
            "| the parent's copies now |\n|---|---|---|---|"
        )
        for name, r in staged.items():
            for h in r["strong_heads_in_previous_stage"]:
                copies = ", ".join(f"{k} {v:.2f}" for k, v in h["copies"].items())
                parent = h["parent_score"]
                print(
                    f"| {name} | {h['head']} ({h['score']:.2f}) | stage {r['previous_stage']} "
                    f"{h['parent']} ({'-' if parent is None else f'{parent:.2f}'}) | {copies} |"
                )
    if args.json:
        from induction.store.io import write_json

        write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
