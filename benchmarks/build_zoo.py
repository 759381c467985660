"""Train the zoo's models into induction/zoo/models/: every seed of every family listed.

    python benchmarks/build_zoo.py [--jobs 2] [--seeds 0-4] [--families dense8 ...]
        [--device cuda] [--seeds-per-process 8]

Default families: the second zoo (docs/zoo.md, "The second zoo"): ``dense8c``, ``grown8c``,
``grown8ce``, ``looped8c``, ``looped8cp``, with the seeds of :data:`SEEDS`. The first
fixed-protocol zoo (``dense8 lidas8 looped8 looped8p``), the 12-layer record (``dense12
lidas12 lidas12e looped12 looped12p``) and the first zoo's families (``dense grown looped
grown12``) can still be rebuilt with ``--families``.

Each model trains in its own single-threaded process (two 1-thread jobs give about 1.8x the
throughput of one 2-thread job on this machine's tiny models). Finished models (``card.json``
present) are skipped. A fixed-protocol model trains in its own folder with checkpoints, so an
interrupted build resumes each unfinished model from its latest checkpoint, bit-identically,
and a build can span sessions; a first-zoo model restarts (its folder appears atomically,
renamed from ``.partial``). Nothing is committed. Prints a summary table from the cards.

Each model folder is claimed while it builds (``induction.store.io.claim_output``, as the CLI claims
its outputs), so a second build of the same model at once is refused, naming the first one's
pid. A folder the builder creates carries :data:`MARK` until its card is written; only such a
folder is ever deleted or restarted. A folder of the same name that the builder did not make
(no card, nothing to resume) is refused, never deleted.

``--seeds-per-process S`` trains up to S seeds of one fixed-protocol family in one process as
one batched model (:mod:`induction.training.multiseed`; same folders, each seed matching its
single-seed twin up to float rounding). Default: 8 with ``--device cuda``, 1 on the CPU, where
batching gains little and single-seed reruns stay bit-identical (docs/zoo.md, "Many seeds per
process").
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from induction.errors import InputError, WorkbenchError  # noqa: E402
from induction.models.registry import SECOND_ZOO  # noqa: E402
from induction.store.io import claim_output, claim_outputs  # noqa: E402
from induction.training.multiseed import default_seeds_per_process, parse_seeds  # noqa: E402
from induction.training.protocol import (  # noqa: E402
    PRESETS,
    TRAIN_CONFIG,
    check_device,
    latest_checkpoint,
)

MODELS = ROOT / "induction" / "zoo" / "models"
COPIED = ROOT / "benchmarks" / "results" / "copied_heads"
FIXED_FAMILIES = list(PRESETS)
#: Seeds per family of the second zoo (issue 22: at least 5 for dense and both LIDAS arms,
#: at least 3 for the looped arms; docs/replication.md, "Amendment", adds seeds 5-7 and 3-4
#: for seeds that fail the in-context gates); other families: ``--seeds``.
SEEDS = {"dense8c": 8, "grown8c": 8, "grown8ce": 8, "looped8c": 5, "looped8cp": 5}
#: Round 4's arms and seeds, fixed before any of them trained (docs/replication.md, rule R8:
#: 6 seeds per arm from the power calculation; grown8re and looped8rp do not train); the top-
#: growth arm first, whose seed 0 becomes the default model once it passes every gate:
#: ``python benchmarks/build_zoo.py --families grown8rt dense8r grown8r looped8r grown8rte``.
ROUND4_ORDER = ["grown8rt", "dense8r", "grown8r", "looped8r", "grown8rte"]
SEEDS |= dict.fromkeys(ROUND4_ORDER, 6)
#: Grown families whose every seed's checkpoint series is swept for the copied-head table
#: before the series is dropped (R8; seed 0 ships its series and is swept from it).
SWEPT = ("grown8r", "grown8rt", "grown8rte")
#: The default grown model first: its checkpoint series decides the heads-before-growth gate.
BUILD_ORDER = ["grown8c", "dense8c", "grown8ce", "looped8c", "looped8cp"]
assert sorted(BUILD_ORDER) == sorted(SECOND_ZOO)


#: The mark of a model folder this builder created and has not finished: only such a folder
#: may be deleted (a restart) by a later build.
MARK = ".build_zoo"


def _made_here(folder: Path) -> bool:
    return (folder / MARK).is_file()


def _claim_new(folder: Path) -> None:
    """Create ``folder`` (absent, or one this builder made) with its mark; a folder of that
    name the builder did not make is refused, never deleted."""
    if folder.exists() or folder.is_symlink():
        if not (folder.is_dir() and _made_here(folder)):
            raise InputError(
                f"{folder} exists but was not made by build_zoo (no {MARK} mark) and holds "
                "no run to resume; move it away or pass another --dest"
            )
        shutil.rmtree(folder)  # an unfinished folder of ours: start afresh
    folder.mkdir(parents=True)
    (folder / MARK).write_text(json.dumps({"by": "benchmarks/build_zoo.py"}) + "\n")


def build(family: str, seed: int, dest: Path = MODELS, device: str | None = None) -> str:
    """Train (or resume, or skip) one model. ``device``: where it trains (default: a fresh
    run on the CPU, a resumed one on the device its ``train_config.json`` recorded). The
    folder is claimed for the whole build; a second build of it at once is refused."""
    out = dest / f"{family}-s{seed}"
    if (out / "card.json").exists():
        return f"{out.name}: present"
    with claim_output(out, clean=False):
        if (out / "card.json").exists():  # finished while we waited for the claim
            return f"{out.name}: present"
        return _build(family, seed, out, device)


def _build(family: str, seed: int, out: Path, device: str | None) -> str:
    dest = out.parent
    if family in PRESETS:
        step = latest_checkpoint(out) if (out / TRAIN_CONFIG).is_file() else None
        if step is not None:
            code = (
                "from pathlib import Path; from induction.training.protocol import train_fixed; "
                f"train_fixed(None, out=Path({str(out)!r}), progress=False, resume=True, "
                f"device={device!r})"
            )
            done = f"{out.name}: resumed from step {step}"
        else:
            _claim_new(out)  # nothing resumable: start afresh (only in a folder of ours)
            code = (
                "from pathlib import Path; from induction.training.train import train, zoo_config; "
                f"train(zoo_config({family!r}, {seed}, device={device or 'cpu'!r}), "
                f"out=Path({str(out)!r}), progress=False)"
            )
            done = f"{out.name}: trained"
        _run(code, dest.parent / f"build-{family}-s{seed}.log")
        if seed != 0 and (out / "card.json").is_file() and _made_here(out):
            if family in SWEPT and (out / "duplication_log.json").is_file():
                # what each copied head became needs the series (R8): sweep it before it goes
                _run(_sweep_code(out), dest.parent / f"build-{family}-s{seed}-sweep.log")
                done += ", copied heads swept"
            # only the first seed ships its checkpoint series; the others regenerate it
            shutil.rmtree(out / "checkpoints", ignore_errors=True)
            done += " (checkpoints dropped: only seed 0 ships them)"
        if (out / "card.json").is_file():
            (out / MARK).unlink(missing_ok=True)  # finished: a model, no longer a build
        return done
    if out.exists() or out.is_symlink():
        raise InputError(
            f"{out} exists without a card.json and was not made by build_zoo; move it away "
            "or pass another --dest"
        )
    tmp = out.with_name(out.name + ".partial")
    _claim_new(tmp)
    code = (
        "from pathlib import Path; from induction.training.train import train, zoo_config; "
        f"train(zoo_config({family!r}, {seed}), out=Path({str(tmp)!r}), progress=False)"
    )
    _run(code, dest.parent / f"build-{family}-s{seed}.log")
    (tmp / MARK).unlink(missing_ok=True)
    tmp.rename(out)
    return f"{out.name}: trained"


def build_seeds(family: str, seeds: list[int], dest: Path = MODELS, device: str | None = None
                ) -> list[str]:  # fmt: skip
    """Train (or resume, or skip) seeds of one fixed-protocol ``family`` in one process as one
    batched model (:func:`induction.training.multiseed.train_seeds`); each seed's folder is
    what :func:`build` would write, its card recording ``train_seeds_per_process``."""
    outs, lines, todo = [dest / f"{family}-s{s}" for s in seeds], [], []
    with claim_outputs(outs):  # every seed's folder, for the whole build (as build() does)
        for seed, out in zip(seeds, outs, strict=True):
            if (out / "card.json").exists():
                lines.append(f"{out.name}: present")
                continue
            step = latest_checkpoint(out) if (out / TRAIN_CONFIG).is_file() else None
            if step is None:
                _claim_new(out)  # nothing resumable: start afresh (only in a folder of ours)
            todo.append((seed, out, step))
        if not todo:
            return lines
        cfgs = ", ".join(
            "None"
            if step is not None
            else f"zoo_config({family!r}, {seed}, device={device or 'cpu'!r})"
            for seed, _, step in todo
        )
        code = (
            "from pathlib import Path; from induction.training.multiseed import train_seeds; "
            "from induction.training.train import zoo_config; "
            f"train_seeds([{cfgs}], [{', '.join(f'Path({str(o)!r})' for _, o, _ in todo)}], "
            f"resume={[step is not None for *_, step in todo]!r}, progress=False, "
            f"device={device!r})"
        )
        _run(code, dest.parent / f"build-{family}-s{todo[0][0]}-{len(todo)}.log")
        for seed, out, step in todo:
            done = f"{out.name}: " + ("trained" if step is None else f"resumed from step {step}")
            done += f" ({len(todo)} seeds in one process)"
            if seed != 0 and (out / "card.json").is_file() and _made_here(out):
                shutil.rmtree(out / "checkpoints", ignore_errors=True)
                done += " (checkpoints dropped: only seed 0 ships them)"
            if (out / "card.json").is_file():
                (out / MARK).unlink(missing_ok=True)  # finished: a model, no longer a build
            lines.append(done)
    return lines


def _sweep_code(out: Path) -> str:
    """``benchmarks/copied_heads.py`` on a model folder, by its path (a shipped model of the
    same name must not stand in for it; ``$INDUCTION_ZOO`` lets the summary find the other
    series beside it): for the shipped zoo its sweep goes to the shipped results (where the
    summary reads it once the series is gone), for another ``--dest`` to ``copied_heads/``
    beside that folder."""
    results = COPIED if out.parent == MODELS else out.parent.parent / "copied_heads"
    return (
        "import os, sys; "
        f"os.environ['INDUCTION_ZOO'] = {str(out.parent)!r}; "
        f"sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); "
        "import copied_heads; "
        f"raise SystemExit(copied_heads.main([{str(out)!r}, '--out-dir', {str(results)!r}]))"
    )


def _run(code: str, log: Path) -> None:
    with open(log, "a") as fh:
        done = subprocess.run(
            [sys.executable, "-c", code], stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT
        )
    if done.returncode:  # one line naming the log, which stays for reading
        raise WorkbenchError(f"training failed (exit code {done.returncode}); see {log}")
    log.unlink()


def plan(families: list[str], seeds: list[int] | None = None) -> list[tuple[str, int]]:
    """``(family, seed)`` in build order: seed-major (every family's seed 0 first, so a build
    cut short leaves whole seed sets); ``seeds`` None: each family's :data:`SEEDS` (else 5)."""
    top = max(SEEDS.get(f, 5) for f in families)
    return [
        (f, s)
        for s in (seeds if seeds is not None else range(top))
        for f in families
        if seeds is not None or s < SEEDS.get(f, 5)
    ]


def check_args(args) -> None:
    """Refuse, before any folder or log is made, what no build can use (one line, exit 2)."""
    from induction.training.first_zoo import FAMILIES, VARIANTS

    if args.jobs < 1:
        raise InputError(f"--jobs must be >= 1, got {args.jobs}")
    known = [*PRESETS, *FAMILIES, *VARIANTS]
    unknown = [f for f in args.families if f not in known]
    if unknown:
        raise InputError(f"unknown zoo family {', '.join(unknown)}; use {', '.join(known)}")
    if args.seeds is not None:  # "0-7", "0-3,8", "0 1 2": distinct seeds, or one line
        args.seeds = parse_seeds(",".join(map(str, args.seeds)))
    if any(not 0 <= s < 2**32 for s in args.seeds or ()):
        raise InputError(f"--seeds must be in 0..{2**32 - 1}, got {args.seeds}")
    for folder in (args.dest, *args.dest.parents):
        if folder.exists() and not folder.is_dir():
            raise InputError(f"--dest {args.dest}: {folder} is a file; pass a folder path")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--seeds",
        nargs="+",
        default=None,
        help="seeds, a list or ranges: 0 1 2, 0-7, 0-3,8 (default: per family, SEEDS; 0-4 for "
        "families not there)",
    )
    ap.add_argument("--seeds-per-process", type=int, default=None,
                    help="fixed-protocol seeds of one family batched as one model per process "
                    "(default: 8 with --device cuda, else 1: bit-identical CPU reruns; "
                    "docs/zoo.md, 'Many seeds per process')")  # fmt: skip
    ap.add_argument("--families", nargs="+", default=BUILD_ORDER,
                    help="zoo families (default: the second zoo, in the order seed 0 of each "
                    "first)")  # fmt: skip
    ap.add_argument("--dest", type=Path, default=MODELS, help="where the model folders go")
    ap.add_argument("--device", default=None,
                    help="cpu or cuda: where the models train (default: fresh runs on the CPU, "
                    "bit-identical reruns; resumed runs where they began). Several --jobs share "
                    "one GPU (docs/zoo.md, 'Training on a GPU')")  # fmt: skip
    args = ap.parse_args()
    check_args(args)
    if args.device is not None:
        first_zoo = [f for f in args.families if f not in PRESETS]
        if first_zoo and args.device != "cpu":
            ap.error(f"{', '.join(first_zoo)}: first-zoo families train on the CPU only")
        try:
            check_device(args.device)
        except InputError as e:
            ap.error(str(e))
    per = args.seeds_per_process
    per = default_seeds_per_process(args.device or "cpu") if per is None else per
    if per < 1:
        ap.error(f"--seeds-per-process must be >= 1, got {per}")
    args.dest.mkdir(parents=True, exist_ok=True)
    todo = plan(args.families, args.seeds)
    with ThreadPoolExecutor(args.jobs) as pool:
        try:
            if per == 1:
                for line in pool.map(
                    lambda fs: build(*fs, dest=args.dest, device=args.device), todo
                ):
                    print(line, flush=True)
            else:  # each family's seeds in groups of ``per``; first-zoo families one by one
                groups: list[tuple[str, list[int]]] = []
                filling: dict[str, list[int]] = {}
                for family, seed in todo:
                    if family in PRESETS and len(filling.get(family, ())) in range(1, per):
                        filling[family].append(seed)
                    else:
                        filling[family] = [seed]
                        groups.append((family, filling[family]))

                def work(group: tuple[str, list[int]]) -> list[str]:
                    family, seeds = group
                    if family not in PRESETS:
                        return [build(family, seeds[0], dest=args.dest, device=args.device)]
                    return build_seeds(family, seeds, dest=args.dest, device=args.device)

                for lines in pool.map(work, groups):
                    for line in lines:
                        print(line, flush=True)
        except InputError as e:  # a folder not ours, or one another build holds
            print(f"error: {e}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None
    head = ("model", "steps", "formed/grown", "sec", "FLOPs", "vs dense", "d20", "d32", "d50")
    print("{:<12} {:>6} {:>12} {:>7} {:>9} {:>8} {:>6} {:>6} {:>6}".format(*head))
    for card_path in sorted(args.dest.glob("*/card.json")):
        c = json.loads(card_path.read_text())
        when = c.get("formed_at_step", c.get("growth_steps"))
        print(
            f"{c['name']:<12} {c['steps']:>6} {str(when):>12} {c['train_seconds']:>7} "
            f"{c['train_flops']:>9.3g} {c['flops_vs_dense']:>8} {c['max_induction_d20']:>6} "
            f"{c['max_induction_d32']:>6} {c['max_induction_d50']:>6}"
        )


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
