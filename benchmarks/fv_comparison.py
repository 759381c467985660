"""Function-vector heads beside induction heads (issue 26; Yin and Steinhardt 2025): which kind
does a model's few-shot accuracy follow, and which its token-loss difference?

    python benchmarks/fv_comparison.py MODEL [MODEL ...] [--fracs 0.01 0.05 0.1 0.2]
        [--controls 10] [--mode mean] [--n-items 32] [--fv-prompts 16] [--gated-tasks] [--fast]
        [--out-dir benchmarks/results/fv] [--markdown docs/results-fv.md]

Per model, through the jobs ``induction fv``, ``induction scan`` and ``induction ablate`` run:

1. the two rankings: FV scores (``induction.circuits.fv``, on the model's pair tasks: ``words``
   for real tokenizers, ``zoofacts`` for zoo models) and induction scores (the scan); the
   overlap of their top 2% and top 10%, the Spearman correlation over all heads, the layers
   of the top FV heads and their induction scores;
2. exclusion ablation at each fraction, both ways (``--score fv --exclude induction:0.02`` and
   ``--score induction --exclude fv:0.02``): the mean few-shot drop on the pair tasks against
   uniform and layer-shaped controls from the same remaining pool, and the token-loss
   difference under the same head sets (``--token-loss``);
3. gates first: with ``--gated-tasks`` (SmolLM2's run) only the tasks the clean model does
   above chance are scored and ablated; the clean pair-task score must beat chance (the
   candidate accuracy against ``1 / candidates``), and the corrupted FV prompts must lose the
   task (headroom: clean minus corrupted answer probability >= ``HEADROOM``; the zoo's
   relations need ``--corruption foreign``), else the comparison is "untestable here" and
   says why.

Writes ``<out-dir>/<model>.json`` (every number) as each model lands and a markdown table
(``--markdown``) that docs/results.md links; ``--fast`` is a smoke-test size.

Resumable across processes and machines: each finished step (the task gates, the two
rankings, each arm) is kept in ``<out-dir>/<model>.partial.json`` (sealed, written atomically)
and a rerun with the same model files, settings and code resumes after the last one; commit
that file and a fresh clone resumes too (SmolLM2 at 20 controls is about ten CPU-hours, a
session three). It is deleted once ``<model>.json`` is written. Delete it to start afresh.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ablation import ablate  # noqa: E402
from ablation.config import AblationConfig  # noqa: E402
from induction import load_model  # noqa: E402
from induction.circuits.fv import fv_scores  # noqa: E402
from induction.scores.scan import scan  # noqa: E402
from induction.store.io import json_types, write_json, write_text  # noqa: E402

EXCLUDE = 0.02  # Yin and Steinhardt's exclusion: the other kind's top 2%
#: Packages whose code decides a step's numbers (with everything they import; their syntax
#: trees, as the replication store keys its measurements), besides this script's own bytes.
STEP_CODE = ("ablation", "induction.circuits.fv", "induction.scores.scan")
#: Arguments that do not change a step's numbers: which arms run, and where results go.
NOT_SETTINGS = ("models", "fracs", "out_dir", "markdown", "from_results")

#: Least answer probability the corruption must take away (clean minus corrupted) before the
#: FV scores mean anything: fixed in advance, a tenth of the probability.
HEADROOM = 0.1


def top(table: pd.DataFrame, column: str, frac: float) -> set[tuple[int, int]]:
    k = max(1, int(np.ceil(frac * len(table))))
    rows = table.sort_values(column, ascending=False).head(k)
    return {(int(r.layer), int(r.head)) for r in rows.itertuples()}


def suite_of(loaded, args) -> str:
    return args.suite or ("zoofacts" if loaded.info.zoo_vocabulary else "words")


def step_key(loaded, args) -> str:
    """Content key of one model's steps: its files (or loaded weights), dtype, the settings
    and the code. A stored step is read only under the same key."""
    from induction.replication.store import code_hash, model_hash
    from induction.store.fingerprint import fingerprint

    settings = {k: v for k, v in sorted(vars(args).items()) if k not in NOT_SETTINGS}
    script = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    return fingerprint(model_hash(loaded), str(loaded.info.dtype), settings,
                       code_hash(STEP_CODE), script, length=32)  # fmt: skip


@dataclass
class Steps:
    """The finished steps of one model's comparison, kept in ``path`` after each step, and
    the seconds they took over every process that ran them."""

    path: Path
    key: str
    model: str
    done: dict = field(default_factory=dict)
    seconds_before: float = 0.0
    started: float = field(default_factory=time.perf_counter)

    @classmethod
    def open(cls, path: Path, key: str, model: str) -> Steps:
        """The steps stored at ``path`` under ``key``; none (with one line on stderr saying
        why) for a file of other inputs or one that fails its seal."""
        from induction.store.seals import open_record

        fresh = cls(path, key, model)
        if not path.is_file():
            return fresh
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            data = None
        if isinstance(data, dict) and data.get("key") != key:
            print(f"note: {path} holds steps of other inputs (model files, settings or code); "
                  "starting afresh", file=sys.stderr)  # fmt: skip
            return fresh
        body = open_record(data)
        if body is None:
            print(f"note: {path} fails its seal (edited or damaged); starting afresh",
                  file=sys.stderr)  # fmt: skip
            return fresh
        return cls(path, key, model, dict(body["steps"]), float(body["seconds"]))

    @property
    def seconds(self) -> float:
        return self.seconds_before + time.perf_counter() - self.started

    def put(self, name: str, value) -> None:
        from induction.store.seals import seal_record

        self.done[name] = json_types(value)  # as a rerun reads it
        record = {"key": self.key, "model": self.model, "seconds": round(self.seconds, 1),
                  "steps": self.done}  # fmt: skip
        write_json(self.path, seal_record(record))

    def finish(self) -> None:
        self.path.unlink(missing_ok=True)


def tasks_done(loaded, args) -> tuple[list[str] | None, list[dict]]:
    """With ``--gated-tasks``: the suite's tasks the clean model does above chance (the lower
    end of the 95% interval of its own metric above the task's chance level), from one clean
    pass (an ablation of the top 1% with no controls; only its clean half is read). FV heads
    are defined on tasks the model does (Todd et al. 2024) and a drop is only read where there
    is something to drop; the others are named in the results."""
    if not args.gated_tasks:
        return None, []
    cfg = AblationConfig(frac=0.01, suite=suite_of(loaded, args), controls=0,
                         n_items=args.n_items, seed=0, cache=True,
                         readouts=args.readouts)  # fmt: skip
    gates = ablate(loaded, cfg, progress=False).gates
    own = gates.groupby("task", sort=False).head(1)  # each task's own metric comes first
    rows = own[["task", "readout", "n", "clean", "clean_lo", "chance", "above_chance"]]
    table = rows.to_dict(orient="records")
    return [r["task"] for r in table if r["above_chance"]], table


def both_scores(loaded, args, tasks: list[str] | None) -> pd.DataFrame:
    """FV and induction score per head, kept under the cache root keyed by the model's content
    and code fingerprint and the FV settings, so a run stopped later (SmolLM2's takes hours on a
    CPU) resumes without recomputing them."""
    from ablation.run import model_fingerprint
    from induction.store.fingerprint import cache_root, fingerprint, source_hash
    from induction.store.io import read_table, write_table

    suite = suite_of(loaded, args)
    code = source_hash(("induction.circuits.fv",))
    key = fingerprint(model_fingerprint(loaded), suite, tasks, args.fv_prompts, args.fv_seeds,
                      args.corruption, code, length=16)  # fmt: skip
    path = cache_root() / "fv_comparison" / f"{key}.csv"
    base_path = path.with_name(f"{key}-baselines.csv")
    if path.is_file() and base_path.is_file():
        return read_table(path), read_table(base_path)
    result = fv_scores(loaded, suite=suite, tasks=tasks, n_prompts=args.fv_prompts,
                       seeds=args.fv_seeds, corruption=args.corruption)  # fmt: skip
    ind = scan(loaded, scores="induction", seeds=3, progress=False).to_frame()
    heads = result.table[["layer", "head", "fv"]].merge(ind[["layer", "head", "induction"]])
    write_table(result.baselines, base_path)
    write_table(heads, path)
    return heads, result.baselines


def rankings(heads: pd.DataFrame, baselines: pd.DataFrame, args) -> dict:
    """How the two top sets of both scores per head relate."""
    per_task = baselines.groupby("task")[["p_clean", "p_corrupted", "headroom"]].mean()
    facts = {"suite": None, "n_heads": len(heads), "corruption": args.corruption,
             **{k: float(v) for k, v in per_task.mean().items()},
             "baselines": per_task.reset_index().to_dict(orient="records")}  # fmt: skip
    for frac in (0.02, 0.10):
        a, b = top(heads, "fv", frac), top(heads, "induction", frac)
        facts[f"overlap_top{round(frac * 100)}"] = len(a & b) / len(a | b)  # Jaccard
    facts["spearman"] = float(heads["fv"].rank().corr(heads["induction"].rank()))
    fv_top = heads.sort_values("fv", ascending=False).head(max(1, len(heads) // 10))
    facts["fv_top10_layers"] = sorted(int(x) for x in fv_top["layer"])
    facts["fv_top10_induction_mean"] = float(fv_top["induction"].mean())
    facts["induction_all_mean"] = float(heads["induction"].mean())
    return facts


def arm(loaded, scores, score: str, other: str, frac: float, args, tasks) -> dict:
    cfg = AblationConfig(
        frac=frac,
        score=score,
        exclude=f"{other}:{EXCLUDE}",
        suite=suite_of(loaded, args),
        tasks=tuple(tasks) if tasks else None,
        mode=args.mode,
        controls=args.controls,
        n_items=args.n_items,
        seed=0,
        token_loss=True,
        cache=True,
        readouts=args.readouts,
    )
    result = ablate(loaded, cfg, scores=scores, progress=False)
    mean = result.report[result.report.task == "MEAN"].iloc[0]
    cand = result.report[result.report.task == "MEAN[cand_acc]"]
    lp = result.report[result.report.task == "MEAN[logprob]"]
    tl = result.token_loss.summary() if result.token_loss is not None else {}
    return {
        "score": score,
        "exclude": f"{other}:{EXCLUDE}",
        "frac": frac,
        "n_heads": len(result.plan.target),
        "clean": float(mean.clean),
        "drop": float(mean["drop"]),
        "ctrl_mean": float(mean.ctrl_mean),
        "ctrl_std": float(mean.ctrl_std),
        "p_ctrl": float(mean.p_ctrl),
        "cand_acc_clean": float(cand.iloc[0].clean) if len(cand) else float("nan"),
        "token_loss": tl,
        # The gold answer's log-prob moves where the task metric sits at 1.0 and does not
        # (the FV pair's zoo: every pair task clean 1.0, robust to 20% ablations).
        "logprob": {
            k: float(lp.iloc[0][k]) for k in ("clean", "drop", "ctrl_mean", "ctrl_std", "p_ctrl")
        }
        if len(lp)
        else None,
        "gates": [
            {"name": g.name, "passed": g.passed, "detail": g.detail} for g in result.model_gates
        ],  # fmt: skip
        "task_gates": result.gates.to_dict(orient="records") if result.gates is not None else [],
        "verdict": result.verdict(),
    }


def chance_gate(arms: list[dict], tasks_gates: list[dict]) -> tuple[bool, str]:
    """The pair tasks must be done above chance before any drop is read."""
    above = [g for g in tasks_gates if g.get("readout") not in ("logprob", "cand_acc")]
    passed = [g for g in above if g.get("above_chance")]
    if above and len(passed) * 2 > len(above):
        return True, f"{len(passed)} of {len(above)} pair tasks above chance"
    cand = arms[0]["cand_acc_clean"] if arms else float("nan")
    return False, (
        f"{len(passed)} of {len(above)} pair tasks above chance (clean candidate accuracy "
        f"{cand:.2f}): the model does not do the tasks FV heads are defined on"
    )


def headroom_gate(facts: dict) -> tuple[bool, str]:
    """The corrupted prompts must lose the task: a head's CIE is at most the answer's
    probability on clean prompts minus that on corrupted ones."""
    room = facts.get("headroom")
    if room is None:
        return False, "headroom not recorded (a run before the baselines were kept)"
    if room >= HEADROOM:
        return True, f"headroom {room:.2f}"
    return False, (
        f"headroom {room:.2f} < {HEADROOM} (answer probability clean {facts['p_clean']:.3f}, "
        f"{facts['corruption']} {facts['p_corrupted']:.3f}): the corrupted prompts still do "
        "the task, so the FV scores are noise (--corruption foreign)"
    )


def measure(spec: str, args) -> tuple[dict, Steps]:
    """One model's comparison, and its finished steps (deleted once the result is written)."""
    start = time.perf_counter()
    loaded = load_model(spec, device="cpu")
    name = loaded.info.name
    steps = Steps.open(args.out_dir / f"{name}.partial.json", step_key(loaded, args), name)
    if steps.done:
        done = ", ".join(steps.done)
        print(f"{name}: resuming after {len(steps.done)} finished steps ({done}; "
              f"{steps.seconds_before:.0f} s) from {steps.path}")  # fmt: skip

    def elapsed() -> str:
        return f"({time.perf_counter() - start:.0f} s)"

    if "gates" not in steps.done:
        tasks, task_table = tasks_done(loaded, args)
        steps.put("gates", {"tasks": tasks, "task_gates": task_table})
    tasks, task_table = steps.done["gates"]["tasks"], steps.done["gates"]["task_gates"]
    if tasks is not None:
        print(f"{name}: {len(tasks)} of {len(task_table)} tasks above chance: "
              f"{', '.join(tasks) or 'none'} {elapsed()}")  # fmt: skip
        if not tasks:
            return {"model": name, "tasks": [], "task_gates": task_table, "testable": False,
                    "gate": "no pair task above chance", "arms": []}, steps  # fmt: skip
    if "scores" not in steps.done:
        heads, baselines = both_scores(loaded, args, tasks)
        steps.put("scores", {"heads": heads.to_dict(orient="records"),
                             "baselines": baselines.to_dict(orient="records")})  # fmt: skip
    heads = pd.DataFrame(steps.done["scores"]["heads"])
    facts = rankings(heads, pd.DataFrame(steps.done["scores"]["baselines"]), args)
    print(f"{name}: FV and induction scores {elapsed()}")
    scores = heads[["layer", "head", "induction", "fv"]]
    arms = []
    for frac in args.fracs:
        for score, other in (("fv", "induction"), ("induction", "fv")):
            step = f"arm {score} {frac:g}"
            if step not in steps.done:
                steps.put(step, arm(loaded, scores, score, other, frac, args, tasks))
                print(f"{name}: {score} heads at {frac:g} done {elapsed()}")
            arms.append(steps.done[step])
    ok, why = chance_gate(arms, arms[0]["task_gates"])
    room_ok, room_why = headroom_gate(facts)
    if not room_ok:
        why = room_why if ok else f"{why}; {room_why}"
    ok = ok and room_ok
    result = {
        "model": name,
        "tasks": tasks,
        "task_gates": task_table,
        "rankings": facts,
        "heads": steps.done["scores"]["heads"],
        "arms": arms,
        "testable": ok,
        "gate": why,
        "seconds": steps.seconds,
        "settings": {
            k: v for k, v in vars(args).items() if k not in ("models", "out_dir", "markdown")
        },
    }
    return result, steps


def markdown(found: list[dict]) -> str:
    """The rankings per model, then per model and fraction both arms' few-shot drop and
    token-loss effect, and (with readouts) their log-prob drop, each against its own
    controls (mean ± sd, empirical p)."""
    out = [
        "| model | gate (pair tasks above chance, headroom) | headroom (clean - corrupted "
        "answer probability) | top 2% / 10% overlap (Jaccard) | "
        "Spearman | layers of the top 10% FV heads | their mean induction score (all heads) |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in found:
        gate = "pass" if m["testable"] else "untestable: " + m["gate"].split(":")[0]
        if "rankings" not in m:  # no task above chance: nothing was scored
            out.append(f"| {m['model']} | {gate} | | | | | |")
            continue
        r = m["rankings"]
        room = (
            f"{r['headroom']:.2f} ({r['p_clean']:.2f} - {r['p_corrupted']:.2f}, {r['corruption']})"
            if "headroom" in r
            else "not recorded"
        )
        out.append(
            f"| {m['model']} | {gate} | {room} | {r['overlap_top2']:.2f} / "
            f"{r['overlap_top10']:.2f} | "
            f"{r['spearman']:+.2f} | {r['fv_top10_layers']} | "
            f"{r['fv_top10_induction_mean']:.2f} ({r['induction_all_mean']:.2f}) |"
        )
    out += [
        "",
        "| model | frac | few-shot drop, FV heads (controls; p) | few-shot drop, induction "
        "heads (controls; p) | token-loss effect, FV heads (controls; p) | token-loss effect, "
        "induction heads (controls; p) |",
        "|---|---|---|---|---|---|",
    ]
    for m in found:
        by = {(a["score"], a["frac"]): a for a in m["arms"]}
        for frac in sorted({a["frac"] for a in m["arms"]}):
            cells = []
            for score in ("fv", "induction"):
                a = by[(score, frac)]
                cells.append(
                    f"{a['drop']:+.3f} ({a['ctrl_mean']:+.3f} ± {a['ctrl_std']:.3f}; "
                    f"{a['p_ctrl']:.2f})"
                )
            for score in ("fv", "induction"):
                t = by[(score, frac)]["token_loss"]
                cells.append(
                    f"{t['target_effect']:+.3f} ({t['controls_mean']:+.3f} ± "
                    f"{t['controls_sd']:.3f}; {t['p_controls']:.2f})"
                )
            n = by[("fv", frac)]["n_heads"]
            out.append(f"| {m['model']} | {frac:g} ({n} heads) | " + " | ".join(cells) + " |")
    if any(a.get("logprob") for m in found for a in m["arms"]):
        out += [
            "",
            "| model | frac | log-prob drop (nats), FV heads (controls; p) | log-prob drop "
            "(nats), induction heads (controls; p) |",
            "|---|---|---|---|",
        ]
        for m in found:
            by = {(a["score"], a["frac"]): a for a in m["arms"]}
            for frac in sorted({a["frac"] for a in m["arms"]}):
                cells = []
                for score in ("fv", "induction"):
                    lp = by[(score, frac)].get("logprob")
                    cells.append(
                        f"{lp['drop']:+.3f} ({lp['ctrl_mean']:+.3f} ± {lp['ctrl_std']:.3f}; "
                        f"{lp['p_ctrl']:.2f})"
                        if lp
                        else "n/a"
                    )
                n = by[("fv", frac)]["n_heads"]
                out.append(f"| {m['model']} | {frac:g} ({n} heads) | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--fracs", type=float, nargs="+", default=[0.01, 0.05, 0.10, 0.20])
    ap.add_argument("--controls", type=int, default=10)
    ap.add_argument("--mode", default="mean", choices=["zero", "mean"])
    ap.add_argument("--n-items", type=int, default=32)
    ap.add_argument("--suite", default=None, help="default: words, or zoofacts for zoo models")
    ap.add_argument("--fv-prompts", type=int, default=16)
    ap.add_argument("--fv-seeds", type=int, default=2)
    ap.add_argument(
        "--corruption",
        default="shuffled",
        choices=["shuffled", "foreign"],
        help="how FV prompts lose the task (induction fv --corruption)",
    )
    ap.add_argument(
        "--gated-tasks",
        action="store_true",
        help="score and ablate only the tasks the clean model does above chance",
    )
    ap.add_argument(
        "--no-readouts",
        dest="readouts",
        action="store_false",
        help="only each task's own metric, without the teacher-forced log-prob and candidate "
        "accuracy (one forward per candidate: most of the time on a real tokenizer's words)",
    )
    ap.add_argument("--fast", action="store_true", help="smoke-test sizes")
    ap.add_argument("--out-dir", type=Path, default=ROOT / "benchmarks" / "results" / "fv")
    ap.add_argument("--markdown", type=Path, default=None)
    ap.add_argument(
        "--from-results", action="store_true", help="re-render the tables from --out-dir's JSON"
    )
    args = ap.parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):  # progress shows in a log file as it happens
        sys.stdout.reconfigure(line_buffering=True)
    if args.from_results:
        found = [json.loads((args.out_dir / f"{m}.json").read_text()) for m in args.models]
        table = markdown(found)
        print(table)
        if args.markdown is not None:
            write_text(args.markdown, table)
        return 0
    if args.fast:
        args.fracs, args.controls, args.n_items, args.fv_prompts = [0.05], 2, 8, 4
    found = []
    for spec in args.models:
        result, steps = measure(spec, args)
        write_json(args.out_dir / f"{result['model']}.json", result)
        steps.finish()
        found.append(result)
    table = markdown(found)
    print(table)
    if args.markdown is not None:
        write_text(args.markdown, table)
    return 0


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
