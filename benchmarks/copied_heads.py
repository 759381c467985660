"""What every head copied by growth becomes, for each grown zoo model with a checkpoint series
(issue #41 item 6; method: ``induction.dynamics.copies``, docs/dynamics.md "Copied heads").

    python benchmarks/copied_heads.py                          # every grown series
    python benchmarks/copied_heads.py grown8c-s0 --out-dir DIR --details docs/results.md

For each model: ``induction sweep`` of its checkpoint series with the induction,
previous-token and FV scores (reused when the sweep folder already holds them for this code),
then the copied-head table, the per-event counts and a figure. A model that ships no
checkpoint series (round 4's seeds after the first, docs/replication.md R8) is read from its
stored sweep, which ``benchmarks/build_zoo.py`` writes before it drops the series. The summary
covers every series with a stored sweep, not only those named. Writes, atomically, under
``--out-dir`` (default ``benchmarks/results/copied_heads``): ``<model>.csv`` (one row per
descendant), ``<model>.png`` (the score series, coloured by class), ``summary.csv`` (heads per
model, event, role at the copy and class), ``sentences.md`` (one per seed) and ``arms.md``
(one per arm, its seeds pooled); ``--details`` replaces the
``copied-heads`` block of a markdown file with the sentences and the summary table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from induction.errors import WorkbenchError  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "copied_heads"
MARK = "copied-heads"


def grown_series(sweeps: Path | None = None) -> list[str]:
    """Zoo models with a duplication log and a checkpoint series, or a stored sweep of one
    (``sweeps``: round 4 ships seed 0's series only and keeps the others' sweeps, R8)."""
    from induction.models import registry

    def has_series(n: str) -> bool:
        folder = registry.zoo_path(n)
        if not (folder / "duplication_log.json").is_file():
            return False
        return (folder / "checkpoints").is_dir() or (sweeps is not None and (sweeps / n).is_dir())

    return [n for n in registry.zoo_models() if has_series(n)]


def model_folder(spec: str) -> tuple[str, Path]:
    """``(name, folder)`` of a zoo model named ``spec``, or of the model folder ``spec`` is
    (a build's own folder: a shipped model of the same name must not stand in for it)."""
    from induction.models import registry

    path = Path(spec)
    if (path / "config.json").is_file():
        return path.name, path
    return spec, registry.zoo_path(spec)


def measure(spec: str, sweeps: Path, out_dir: Path, say=print):
    """The copied-head result of one zoo model (a name or a folder); writes its table and
    figure."""
    from induction.dynamics.dataset import drop_other_settings
    from induction.dynamics.sweep import SweepSettings, sweep

    name, folder = model_folder(spec)
    dataset = sweeps / name
    if (folder / "checkpoints").is_dir():
        settings = SweepSettings(scores=("induction", "previous_token", "fv"))
        report = sweep([str(folder)], dataset, settings=settings, progress=False, say=say)
        if report.failed:
            raise WorkbenchError(f"{name}: the sweep failed on {report.failed[0][0]}")
        # the scoring code changed since the stored sweep: its parts are superseded
        for part in drop_other_settings(dataset, str(report.settings_hash)):
            say(f"{name}: dropped {part.name} (a sweep under other settings or code)")
    elif not dataset.is_dir():
        raise WorkbenchError(
            f"{name} ships no checkpoint series and {dataset} holds no sweep of it; sweep it "
            "before its checkpoints go (benchmarks/build_zoo.py does for round 4's seeds)"
        )  # else: the stored sweep is the series' record (its checkpoints were not kept)
    result = stored(name, sweeps, folder)
    result.save(out_dir / f"{name}.csv")
    note = None
    try:
        result.plot(out_dir / f"{name}.png")
    except WorkbenchError as e:  # no PNG renderer here: the table still stands
        note = str(e)
    return result, note


def stored(name: str, sweeps: Path, folder: Path | None = None):
    """The copied-head result of a series from its stored sweep (no sweeping); ``folder``:
    the model's, by default the zoo model of that name."""
    from induction.dynamics.copies import copied_heads_of_sweep
    from induction.models import registry
    from lineage.log import DuplicationLog

    folder = folder if folder is not None else registry.zoo_path(name)
    log = DuplicationLog.load(folder / "duplication_log.json")
    return copied_heads_of_sweep(sweeps / name, log, model=name)


def _order(name: str) -> tuple[str, int]:
    family, _, seed = name.rpartition("-s")
    return (family, int(seed)) if seed.isdigit() else (name, -1)


def details_block(results) -> str:
    from induction.dynamics.copies import arm_sentences, summary_table

    lines = [
        f"<!-- {MARK}:start -->",
        "Generated by `python benchmarks/copied_heads.py --details docs/results.md` "
        "(tables and figures in `benchmarks/results/copied_heads/`).",
        "",
    ]
    lines += ["Per arm, its seeds pooled:", ""]
    lines += [f"- {s}" for s in arm_sentences(results)]
    lines += ["", "Per seed:", ""]
    lines += [f"- {r.sentence()}" for r in results]
    table = summary_table(results)
    lines += [
        "",
        "| model | growth step | role at the copy | class | heads |",
        "|---|---:|---|---|---:|",
    ]
    lines += [
        f"| {model} | {step} | {role} | {cls} | {heads} |"
        for model, step, role, cls, heads in table.itertuples(index=False, name=None)
    ]
    lines.append(f"<!-- {MARK}:end -->")
    return "\n".join(lines)


def replace_block(path: Path, block: str) -> None:
    from induction.store.io import write_text

    text = path.read_text()
    start, end = f"<!-- {MARK}:start -->", f"<!-- {MARK}:end -->"
    if start not in text or end not in text:
        raise WorkbenchError(f"{path} has no {start} ... {end} block; add one where it belongs")
    head, rest = text.split(start, 1)
    write_text(path, head + block + rest.split(end, 1)[1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "models", nargs="*", help="zoo models or model folders (default: every grown series)"
    )
    parser.add_argument("--out-dir", type=Path, default=OUT)
    parser.add_argument(
        "--sweeps", type=Path, default=None, help="sweep datasets (default: OUT-DIR/sweeps)"
    )
    parser.add_argument("--details", type=Path, help="markdown file with a copied-heads block")
    args = parser.parse_args(argv)
    try:
        from induction.store.io import write_table, write_text

        sweeps = args.sweeps or args.out_dir / "sweeps"
        names = args.models or grown_series(sweeps)
        if not names:
            raise WorkbenchError("no grown zoo model with a checkpoint series found")
        if args.details is not None and not args.details.is_file():
            raise WorkbenchError(f"--details {args.details}: no such file")
        args.out_dir.mkdir(parents=True, exist_ok=True)
        results = {}
        for spec in names:
            result, note = measure(spec, sweeps, args.out_dir, say=lambda m: None)
            print(result.sentence())
            if note:
                print(f"note: {note}", file=sys.stderr)
            results[model_folder(spec)[0]] = result
        # the summary covers every series swept here before, not only those named now
        for name in grown_series(sweeps):
            if name not in results and (sweeps / name).is_dir():
                results[name] = stored(name, sweeps)
        results = [results[n] for n in sorted(results, key=_order)]
        from induction.dynamics.copies import arm_sentences, summary_table

        write_table(summary_table(results), args.out_dir / "summary.csv")
        write_text(args.out_dir / "sentences.md", "\n".join(f"- {r.sentence()}" for r in results))
        write_text(args.out_dir / "arms.md", "\n".join(f"- {s}" for s in arm_sentences(results)))
        if args.details is not None:
            replace_block(args.details, details_block(results))
            print(f"wrote {args.details}")
        print(f"wrote {args.out_dir}")
    except WorkbenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
