"""Round 4's pilots (docs/replication.md, rule R4-pilot and "Pilot notes"): ``grown8rt-s0``
under one change each, trained, then measured on ``zoo4g`` as the rule reads it.

    python benchmarks/r4_pilot.py NAME [--runs DIR]      # train (resumes), measure, record
    python benchmarks/r4_pilot.py --list

Each pilot in :data:`PILOTS` is written down before it trains (``git log`` shows the order)
and differs from the round-4 recipe of its time in the one change its note names: pilots 2-3
from ``MIX_R4`` with growth at 30/45/60/75% of 4,000 steps; pilot 4 on from the recipe after
pilot 3a (growth at 40/55/70/85%, ``R4_LATE_GROWTH``, the ``grown8rt`` preset since). Some
changes live in the corpus and suite rather than the config (pilot 8: math asks with ``w78``;
pilot 10a: open-book with ``w79``), so a pilot is reproduced from the commit that defined it,
whose ``zoo4g`` also measured it (the card's ``data_sha256`` names its data). The run
trains into ``--runs/NAME/grown8rt-s0`` (default ``runs/r4-pilot``, not committed; an
interrupted run resumes from its latest checkpoint), then ``ablate --frac 0.2 --controls 0
--no-cache`` measures it and the card, duplication log and ablation report are written to
``benchmarks/results/pilot4/NAME_*.json``. It prints the rule's count: tasks whose Wilson 95%
lower bound over 64 items is above chance, on the task's own metric, per group (17 of 19
passes).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from induction.store.io import write_bytes, write_json  # noqa: E402
from induction.training.protocol import ICL_VA_MIX, LATE_GROWTH, r4_phases  # noqa: E402
from induction.zoo.corpus import MIX_R4_PILOT2  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "pilot4"
PRESET = "grown8rt"


def _without(kind: str) -> dict[str, float]:
    """Pilots 2-11's mix without ``kind``, its share given to ``copy`` (the kinds' order kept)."""
    mix = dict(MIX_R4_PILOT2)
    mix["copy"] = round(mix["copy"] + mix.pop(kind), 10)
    return mix


def _mix_phases(**mix: float) -> list[dict]:
    phases = r4_phases()
    phases[1]["mix"] = dict(mix)
    return phases


def _recipe_then() -> list[dict]:
    """The r4 curriculum as pilots 2-12 trained it (``MIX_R4_PILOT2``); ``MIX_R4`` is pilot
    12a's mix since it passed (docs/replication.md, R4-recipe)."""
    return _mix_phases(**MIX_R4_PILOT2)


#: name -> (the one change, its config overrides). ``pilot2`` is the committed recipe.
PILOTS: dict[str, tuple[str, dict]] = {
    "pilot2": (
        "the committed recipe (MIX_R4 after pilot 1, growth at 30/45/60/75%)",
        {"grow_at": LATE_GROWTH, "phases": _recipe_then()},
    ),
    # pilot 2's top-layer heads passed 0.4 (distance 32) between steps 1,200 (0.30) and 1,600
    # (0.67): the first copy waits for them
    "pilot3a": (
        "growth at 40/55/70/85% of the steps (the first copy at step 1,600)",
        {"grow_at": [0.4, 0.55, 0.7, 0.85], "phases": _recipe_then()},
    ),
    # pilot 2's probe kept variable assignment at chance (0.13 at step 4,000) with 0.30 of the
    # data; facts (1.00) and math (0.53-0.92) pass with room, lookup is learnt by step 1,500
    "pilot3b": (
        "varassign 0.45 of the data after the warm-up, from facts, math and lookup",
        {
            "grow_at": LATE_GROWTH,
            "phases": _mix_phases(
                copy=0.05,
                lookup=0.15,
                varassign=0.45,
                facts=0.05,
                openbook=0.15,
                math=0.05,
                programs=0.1,
            ),
        },
    ),
    # pilots 1-3 never learnt variable assignment (probe <= 0.17 at every step, even at 0.45 of
    # the data), where 29 of 34 second-zoo models did on ICL_VA_MIX; every round-4 mix adds
    # `programs`, whose var_reassign (the later of two assignments) and var_which (value ->
    # name) ask other rules in varassign's syntax. 4a: no programs, its 0.10 to copy.
    "pilot4a": (
        "no `programs` after the warm-up (its 0.10 to copy); growth as pilot 3a",
        {"phases": _mix_phases(**_without("programs"))},
    ),
    # 4b, the positive control of the apparatus: the second zoo's mix (ICL_VA_MIX) on this
    # arm. Binding forms here unless the arm (top-layer growth, its schedule) prevents it.
    "pilot4b": (
        "the second zoo's mix (ICL_VA_MIX) after the warm-up; growth as pilot 3a",
        {"phases": _mix_phases(**ICL_VA_MIX)},
    ),
    # 4a (no programs) left binding at chance and 4b (ICL_VA_MIX) began to learn it (probe
    # 0.32 by step 2,250): what blocks it is in what 4a keeps and 4b lacks. Open-book and math
    # problems put "?" before the key ("? w14 : w4"), variable programs after it ("r ? 2").
    # One suspect out each, from the recipe (programs kept: the primitives need them).
    "pilot5a": (
        "no `math` after the warm-up (its 0.10 to copy); growth as pilot 3a",
        {"phases": _mix_phases(**_without("math"))},
    ),
    "pilot5b": (
        "no `openbook` after the warm-up (its 0.15 to copy); growth as pilot 3a",
        {"phases": _mix_phases(**_without("openbook"))},
    ),
    # 5a (no math) learnt binding from step 3,000 and 5b (no openbook) did not: math blocks
    # it. 6: the recipe's mix, but math enters only at 60% (step 2,400), 5a's mix before.
    "pilot6": (
        "`math` enters at 60% of the steps (5a's mix from 25% to 60%, the recipe's after)",
        {
            "phases": [*_mix_phases(**_without("math")), {**_recipe_then()[1], "at": 0.6}],
        },
    ),
    # 6's math entered at step 2,400, before binding formed (5a: from step 3,000), blocked it
    # and was not learnt in 1,600 steps at <= 35% of the peak rate. Math-trained pilots put
    # equal mass on every digit of a variable program, shown or not (2, 4a, 5b, 6: 0.10 each),
    # where 5a and 4b put it on the shown digits (0.32-0.55 vs 0.003-0.009): a shown digit is
    # never math's answer, so math cancels "answer a shown digit", binding's first step
    # (docs/replication.md, "Pilot 7"). 7b: 6's design at 6,000 steps, math from 50% (step
    # 3,000, where 5a's binding began), so math keeps 3,000 steps at <= 50% of the peak rate.
    "pilot7b": (
        "6,000 steps; `math` enters at 50% (step 3,000), 5a's mix from 25% to 50%",
        {
            "steps": 6000,
            "phases": [*_mix_phases(**_without("math")), {**_recipe_then()[1], "at": 0.5}],
        },
    ),
    # 7a: math waits for binding itself, at the first probe (every 250 steps) whose variable
    # assignment reaches 0.5 (the zoo's own gate, VARASSIGN_MIN; the first definition's 0.4 is
    # within noise of the "answer a shown digit" rule's 0.35-0.38 on this probe, so it was
    # raised before the gate could first open), at 75% at the latest; the card records the
    # step (phase_starts)
    "pilot7a": (
        "6,000 steps; `math` enters when the probe's varassign reaches 0.5 (75% at the latest)",
        {
            "steps": 6000,
            "phases": [
                *_mix_phases(**_without("math")),
                {**_recipe_then()[1], "at": 0.75, "gate": {"probe": "varassign", "min": 0.5}},
            ],
        },
    ),
    # 7b learnt math (5 of 5) but open_lookup and open_keys fell to chance (5a: 0.72, 0.56) once
    # math entered: "? O :" asks math exactly as "? e :" asks a lookup, whose answer is the value
    # shown after e, where a shown number is never math's. From pilot 8 math asks with its own
    # word, w78 (how many), in the corpus and in zoo4g alike (induction/zoo/problems.py); the
    # configs are the recipe's, so the one change is the corpus (the card's data_sha256).
    "pilot8a": (
        "the recipe, math asked with `w78` (how many) instead of `?` (corpus and suite)",
        {"phases": _recipe_then()},
    ),
    "pilot8b": (
        "as 8a at 6,000 steps (math from 25%, as the recipe)",
        {"steps": 6000, "phases": _recipe_then()},
    ),
    # 8a learnt math (4 of 5) and no binding: its answer to a program is uniform over the ten
    # digits, as every pilot that learnt math. The marker was not the conflict; the digits
    # are: every math answer is a number the problem does not show. 9a: math segments also
    # draw a training-only recall problem, whose answer is a quantity it states.
    "pilot9a": (
        "as 8a, math segments also draw `math_recall` (answer a stated quantity; not measured)",
        {"corpus": {"math_recall": True}, "phases": _recipe_then()},
    ),
    # 8b (12 of 19) learnt math and began binding at 6,000 steps, 8a (4,000) did not bind.
    # 10b: 8b at 8,000 steps, for the primitives and open-book types still at chance.
    "pilot10b": (
        "as 8b at 8,000 steps (math with `w78`, math from 25%, as the recipe)",
        {"steps": 8000, "phases": _recipe_then()},
    ),
    # 10a: 8b with open-book asking with its own word, w79, leaving `?` to the programs alone
    # (pilots that bound variables lost open-book lookups: 4b, 7a, 8b; docs/replication.md).
    "pilot10a": (
        "as 8b, open-book asks with `w79` instead of `?` (corpus and suite)",
        {"steps": 6000, "phases": _recipe_then()},
    ),  # not taken (11 of 19): the w79 corpus and suite are in commit 7b5db8d only
    # 10b reached 15 of 19 at 8,000 steps (probe 0.80); var_depth2's lower bound fell 0.01
    # short of chance. 11: 10b at 12,000 steps, nothing else changed.
    "pilot11": (
        "as 10b at 12,000 steps",
        {"steps": 12000, "phases": _recipe_then()},
    ),
    # 11 (15 of 19) passed every primitive and math task, and lost open-book: on open_lookup
    # it answers a passage value, but not the keyed one (10b, 8,000 steps: 0.75). 10b is the
    # only pilot that kept the lookups beside binding. Two changes, one each, from 11:
    # 12a gives open-book 0.25 of the data (lookup, learnt by step 2,750 in every pilot since
    # 2, 0.20 -> 0.15; facts, 1.00 in every pilot and 4/4 at 0.05 in 3b, 0.10 -> 0.05).
    "pilot12a": (
        "as 11, `openbook` 0.25 of the data after the warm-up (from lookup and facts)",
        {
            "steps": 12000,
            "phases": _mix_phases(
                copy=0.05,
                lookup=0.15,
                varassign=0.3,
                facts=0.05,
                openbook=0.25,
                math=0.1,
                programs=0.1,
            ),
        },
    ),
    # 12b: math states and asks without `:` (its own word `w80`, "has": `P w80 4 O , P w74 3 ;
    # w78 O w80`), in the corpus and in zoo4g alike, so `:` is open-book's alone; 7b lost the
    # lookups when math entered. The change is in the corpus (the commit after this one); the
    # config is 11's.
    "pilot12b": (
        "as 11, math states and asks with `w80` instead of `:` (corpus and suite)",
        {"steps": 12000, "phases": _recipe_then()},
    ),  # stopped at step 6,949 (reads like 11); commit 4986ca0 reproduces and resumes it
    # Pilots that bind variables lose open-book's keyed `:` lookup; every pilot keeps the
    # lookup kind's `k > v` (probe 1.00). 13: open-book states and asks with `>` (corpus and
    # suite, the commit after this one); otherwise 11.
    "pilot13": (
        "as 11, open-book states and asks with `>` instead of `:` (corpus and suite)",
        {"steps": 12000, "phases": _recipe_then()},
    ),
}


# pilots that name no steps trained the round-4 presets' steps of their time, the second
# zoo's 4,000 (12,000 since R4-recipe)
for _change, _overrides in PILOTS.values():
    _overrides.setdefault("steps", 4000)


def train_pilot(name: str, runs: Path) -> Path:
    from induction.training.protocol import preset_config, train_fixed

    out = runs / name / f"{PRESET}-s0"
    if (out / "card.json").is_file():
        print(f"{name}: trained already ({out})")
        return out
    resume = (out / "train_config.json").is_file()
    cfg = preset_config(PRESET, 0, **PILOTS[name][1])
    train_fixed(cfg, out=out, resume=resume)
    return out


def measure_pilot(name: str, folder: Path) -> dict:
    """Ablate as the rule reads it and record the card, log and report beside pilot 1's."""
    from ablation import ablate

    report = ablate(
        str(folder), suite="zoo4g", frac=0.2, controls=0, cache=False, progress=False
    )  # the rule's suite, also for a pilot whose mix has no round-4 kind (4b)
    RESULTS.mkdir(parents=True, exist_ok=True)
    report.save(RESULTS / f"{name}_ablation_zoo4g.json")
    for src, dst in [("card.json", "card"), ("duplication_log.json", "duplication_log")]:
        if (folder / src).is_file():
            write_bytes(RESULTS / f"{name}_{dst}.json", (folder / src).read_bytes())
    gates = [g for g in report.meta["gates"] if g["readout"] in ("em", "f1")]
    by_group: dict[str, list[str]] = {}
    for g in gates:
        by_group.setdefault(g["group"], [])
        if g["above_chance"]:
            by_group[g["group"]].append(g["task"])
    summary = {
        "pilot": name,
        "change": PILOTS[name][0],
        "above_chance": sum(len(v) for v in by_group.values()),
        "tasks": len(gates),
        "by_group": {
            k: f"{len(v)} of {sum(g['group'] == k for g in gates)}" for k, v in by_group.items()
        },
        "model_gates": report.meta.get("model_gates"),
    }
    write_json(RESULTS / f"{name}_summary.json", summary)
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("name", nargs="?", choices=sorted(PILOTS))
    ap.add_argument("--runs", type=Path, default=ROOT / "runs" / "r4-pilot")
    ap.add_argument("--list", action="store_true", help="list the pilots and their one change")
    args = ap.parse_args(argv)
    if args.list or args.name is None:
        for name, (change, _) in PILOTS.items():
            print(f"{name}: {change}")
        return 0
    folder = train_pilot(args.name, args.runs)
    print(json.dumps(measure_pilot(args.name, folder), indent=1))
    return 0


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
