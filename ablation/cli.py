"""``induction ablate``: zero (or mean-ablate) the top heads and measure few-shot drops."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from induction.cli_options import DEFAULT_MODEL, DeviceOpt, DtypeOpt, ModelArg, SeedOpt
from induction.errors import InputError

SUITE_HELP = (
    "zoo (default for zoo models), words (default otherwise), paper19, regbench, gsm8k, "
    "or a JSONL task file."
)


def ablate(
    model: ModelArg = DEFAULT_MODEL,
    frac: Annotated[
        float,
        typer.Option(
            "--frac", help="Fraction of all heads to ablate, top by --score (ceil, at least one)."
        ),
    ] = 0.2,
    suite: Annotated[str | None, typer.Option("--suite", help=SUITE_HELP)] = None,
    task: Annotated[
        list[str] | None, typer.Option("--task", help="Only these tasks of the suite (repeatable).")
    ] = None,
    mode: Annotated[str, typer.Option("--mode", help="zero or mean ablation.")] = "zero",
    mean_over: Annotated[
        str,
        typer.Option(
            "--mean-over", help="Mean ablation: mean over all reference tokens, or per position."
        ),
    ] = "all",
    controls: Annotated[
        int, typer.Option("--controls", help="Random head sets of the same size.")
    ] = 5,
    match_layers: Annotated[
        bool,
        typer.Option(
            "--match-layers", help="Controls take as many heads per layer as the target set."
        ),
    ] = False,
    tied: Annotated[
        bool,
        typer.Option("--tied", help="Looped models: ablate a head in every pass of its block."),
    ] = False,
    shots: Annotated[
        int | None,
        typer.Option("--shots", help="Demonstrations per prompt (default: per suite/task)."),
    ] = None,
    n_items: Annotated[
        int | None, typer.Option("--n-items", help="Evaluated items per task (default: per suite).")
    ] = None,
    seed: SeedOpt = 0,
    prompt_seeds: Annotated[
        int,
        typer.Option(
            "--prompt-seeds",
            help="Repeat with this many prompt seeds (seed, seed+1, ...) and report the spread.",
        ),
    ] = 1,
    score: Annotated[
        str, typer.Option("--score", help="Detector score column used to rank heads.")
    ] = "induction",
    heads: Annotated[
        str | None,
        typer.Option("--heads", help="Explicit heads 'L.H,L.H' instead of --frac/--score."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Report table (.csv, .parquet, .json, .jsonl)."),
    ] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Plotly bar chart (.html).")] = None,
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = None,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Prompts per batch.")] = 32,
    threads: Annotated[
        int | None,
        typer.Option(
            "--threads",
            help="CPU threads for torch "
            "(default: 1 for zoo models, whose tiny "
            "matrices gain nothing from more, else "
            "torch's; 1 is far faster on a busy "
            "machine).",
        ),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            help="Local datasets for paper19/gsm8k (default $INDUCTION_DATA or ./data).",
        ),
    ] = None,
    hub: Annotated[
        bool, typer.Option("--hub", help="Fetch missing datasets with `datasets` (needs network).")
    ] = False,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Neither read nor write the resume cache.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Ablate the top --frac heads by induction score and report few-shot drops per task
    against random-head controls. Interrupted runs resume from a cache of finished results."""
    from ablation.selection import n_selected
    from induction.io import TABLE_SUFFIXES, check_output_path, model_inputs, refuse_overwrite_input

    for path in (out, plot):  # never the model's own files (config.json, weights, ...)
        refuse_overwrite_input(path, *model_inputs(model))
    check_output_path(out, TABLE_SUFFIXES, "--out")
    check_output_path(plot, (".html", ".htm"), "--plot")
    if not (0 < frac <= 1):
        raise InputError(f"--frac must be in (0, 1], got {frac}; e.g. --frac 0.2")
    n_selected(frac, 1)
    if mode not in ("zero", "mean"):
        raise InputError(f"--mode must be zero or mean, got {mode!r}")
    if mean_over not in ("all", "position"):
        raise InputError(f"--mean-over must be all or position, got {mean_over!r}")
    if controls < 0:
        raise InputError(f"--controls must be >= 0, got {controls}")
    if prompt_seeds < 1:
        raise InputError(f"--prompt-seeds must be >= 1, got {prompt_seeds}")
    if threads is not None and threads < 1:
        raise InputError(f"--threads must be >= 1, got {threads}")
    if batch_size < 1:
        raise InputError(f"--batch-size must be >= 1, got {batch_size}")
    for path, flag in ((out, "--out"), (plot, "--plot")):
        if path is not None and path.is_dir():
            raise InputError(f"{flag} {path} is a folder; pass a file path")
    if out is not None and out.suffix.lower() not in (".csv", ".parquet", ".json", ".jsonl"):
        raise InputError(f"--out {out}: use a .csv, .parquet, .json or .jsonl file")
    if plot is not None and plot.suffix.lower() not in (".html", ".htm"):
        raise InputError(f"--plot {plot}: use an .html file")

    from induction.io import refuse_overwrite_input

    suite_path = Path(suite) if suite else None
    if suite_path is not None and suite_path.is_file():
        refuse_overwrite_input(out, suite_path)
        refuse_overwrite_input(plot, suite_path)

    from ablation.tasks import SUITES, default_suite, load_suite

    tokenizer_free = suite is not None and suite not in ("zoo", "regbench")
    if suite is not None and suite not in SUITES and not suite.endswith(".jsonl"):
        if not (suite_path and suite_path.is_file()):
            raise InputError(
                f"unknown suite {suite!r}; use one of {', '.join(SUITES)} or a "
                "path to a JSONL task file"
            )
    tasks = None
    if tokenizer_free:  # fail on bad task files / missing data before loading the model
        tasks = [
            t
            for s in range(seed, seed + prompt_seeds)
            for t in load_suite(
                suite, shots=shots, n_items=n_items, seed=s, tasks=task, data_dir=data_dir, hub=hub
            )
        ]

    from rich.console import Console

    from ablation import report
    from ablation.engine import Engine, ResultCache
    from ablation.run import default_cache_path, plan_heads, run_ablation
    from induction.loading import load_model

    console = Console(stderr=True)
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    loaded = load_model(model, device=device, dtype=dtype)
    info = loaded.info
    if threads is None and info.source == "zoo" and str(info.device).startswith("cpu"):
        import torch

        torch.set_num_threads(1)
    suite = suite or default_suite(info)
    if tasks is None:
        tasks = [
            t
            for s in range(seed, seed + prompt_seeds)
            for t in load_suite(
                suite,
                tokenizer=loaded.tokenizer,
                bos_id=info.bos_token_id,
                shots=shots,
                n_items=n_items,
                seed=s,
                tasks=task,
                data_dir=data_dir,
                hub=hub,
                max_tokens=_prompt_budget(loaded),
            )
        ]
    plan = plan_heads(
        loaded,
        frac=frac,
        score=score,
        heads=heads,
        n_controls=controls,
        seed=seed,
        match_layers=match_layers,
        tied=tied,
        cache_dir=None if no_cache else default_cache_path(loaded).parent,
    )
    if not quiet:
        console.print(
            f"[bold]{info.name}[/]: {plan.selection}; ablating "
            f"{_heads_text(plan.target)} ({mode}); "
            f"{len(plan.controls)} random controls; suite {suite}, "
            f"{len({t.name for t in tasks})} tasks x {prompt_seeds} prompt seed(s)"
        )
    cache = ResultCache(None if no_cache else default_cache_path(loaded))
    engine = Engine(loaded.bridge, loaded.tokenizer, batch_size=batch_size)
    run = run_ablation(
        loaded,
        tasks,
        plan,
        mode=mode,
        mean_over=mean_over,
        engine=engine,
        cache=cache,
        progress=not quiet,
    )
    df = report.build_report(run)
    run.meta.update(
        {
            "suite": suite,
            "frac": frac,
            "score": score,
            "shots": shots,
            "n_items": n_items,
            "seed": seed,
            "prompt_seeds": prompt_seeds,
        }
    )
    title = f"induction ablate {info.name} --suite {suite}: {plan.selection}, {mode}"
    report.print_table(df, title=title, console=_stdout_console())
    if out is not None:
        report.write_report(df, out, run.meta)
    if plot is not None:
        report.plot_report(df, plot, title=title)
    mean = report.overall_drop(df)
    if mean is not None and not quiet:
        row = df[df.task == "MEAN"].iloc[0]
        console.print(
            f"mean drop over generation tasks: {mean:+.3f} "
            f"(random controls {row.ctrl_mean:+.3f} ± {row.ctrl_std:.3f})"
        )


def _stdout_console():
    import sys

    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=120)


def _heads_text(heads, limit: int = 12) -> str:
    text = ", ".join(f"{a}.{b}" for a, b in heads[:limit])
    return text + (f", ... ({len(heads)} heads)" if len(heads) > limit else "")


def _prompt_budget(loaded) -> int:
    """Longest prompt for generated suites: a zoo model's training length (its card), else
    the context length capped at 512."""
    card = loaded.card if isinstance(loaded.card, dict) else {}
    seq_len = (card.get("config") or {}).get("seq_len")
    return int(seq_len) if seq_len else min(loaded.info.n_ctx, 512)
