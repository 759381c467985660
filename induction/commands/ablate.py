"""``induction ablate``: zero (or mean-ablate) the top heads and measure few-shot drops."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ablation.config import DEFAULT_CONTROLS
from induction.commands.options import DEFAULT_MODEL, DeviceOpt, DtypeOpt, ModelArg, SeedOpt
from induction.errors import InputError

SUITE_HELP = (
    "zoo19 (default for zoo models), zoo, words (default otherwise), paper19, regbench, "
    "gsm8k, or a JSONL task file."
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
        int,
        typer.Option(
            "--controls",
            help="Random head sets of the same size (p-values need >= 20 to reach 0.05).",
        ),
    ] = DEFAULT_CONTROLS,
    controls_shape: Annotated[
        str,
        typer.Option(
            "--controls-shape",
            help="uniform (heads drawn from all layers), layer (the target's heads per layer, "
            "in layers within --band of its layers) or both (--controls of each).",
        ),
    ] = "both",
    band: Annotated[
        int | None,
        typer.Option(
            "--band", help="Layer-shaped controls: layers either side (default n_layers/8)."
        ),
    ] = None,
    exclude: Annotated[
        str | None,
        typer.Option(
            "--exclude",
            help="SCORE:FRAC, e.g. induction:0.02 or fv:0.02: leave the top FRAC heads by "
            "another score out of the target and of every control (exclusion ablation).",
        ),
    ] = None,
    readouts: Annotated[
        bool,
        typer.Option(
            "--readouts/--no-readouts",
            help="Also the teacher-forced log-prob of the gold answer and the accuracy over "
            "the answer candidates (one forward pass per item).",
        ),
    ] = True,
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
    batch: Annotated[
        int, typer.Option("--batch", "--batch-size", help="Prompts per forward pass.")
    ] = 32,
    max_prompt_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-prompt-tokens",
            help="Longest generated prompt (default: a zoo model's training length, else "
            "the context capped at 512).",
        ),
    ] = None,
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
    lm_eval: Annotated[
        list[str] | None,
        typer.Option(
            "--lm-eval",
            help="lm-evaluation-harness tasks (names, tags or YAML files; comma-separated or "
            "repeated) instead of --suite; needs the [lm-eval] extra. See docs/lm-eval.md.",
        ),
    ] = None,
    lm_eval_include: Annotated[
        Path | None,
        typer.Option(
            "--lm-eval-include", help="Folder of local lm-eval task configs, searched first."
        ),
    ] = None,
    trust_remote_code: Annotated[
        bool,
        typer.Option(
            "--trust-remote-code",
            help="Allow a checkpoint's own Python code, and lm-eval task configs' code "
            "(!function imports, HF evaluate metrics, templates outside the sandbox), to run.",
        ),
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Ablate the top --frac heads by induction score and report few-shot drops per task
    against random-head controls. Interrupted runs resume from a cache of finished results."""
    from ablation.config import AblationConfig
    from induction.io import TABLE_SUFFIXES, check_output_path, prepare_outputs
    from induction.specs import model_inputs

    check_output_path(out, TABLE_SUFFIXES, "--out")
    check_output_path(plot, (".html", ".htm"), "--plot")
    task_yamls = [
        Path(n.strip())
        for value in lm_eval or []
        for n in value.split(",")
        if Path(n.strip()).suffix in (".yaml", ".yml") and Path(n.strip()).is_file()
    ]
    prepare_outputs(
        {"--out": out, "--plot": plot},
        [
            *model_inputs(model),
            suite if suite and Path(suite).is_file() else None,
            data_dir,
            lm_eval_include,
            *task_yamls,
        ],
    )

    if threads is not None and threads < 1:
        raise InputError(f"--threads must be >= 1, got {threads}")
    config = AblationConfig(
        frac=frac,
        heads=heads,
        score=score,
        suite=suite,
        tasks=tuple(task) if task else None,
        mode=mode,
        mean_over=mean_over,
        controls=controls,
        controls_shape=controls_shape,
        band=band,
        readouts=readouts,
        exclude=exclude,
        match_layers=match_layers,
        tied=tied,
        shots=shots,
        n_items=n_items,
        seed=seed,
        prompt_seeds=prompt_seeds,
        batch=batch,
        max_prompt_tokens=max_prompt_tokens,
        data_dir=data_dir,
        hub=hub,
        cache=not no_cache,
        lm_eval=tuple(lm_eval) if lm_eval else None,
        lm_eval_include=lm_eval_include,
        trust_remote_code=trust_remote_code,
    )
    if lm_eval:
        from ablation.lm_eval_backend import require_lm_eval, task_inputs
        from ablation.pipeline import run_inputs
        from induction.io import check_outputs

        require_lm_eval()
        # the task configs, their include chains and data files; code in them is refused here
        check_outputs(
            {"--out": out, "--plot": plot},
            run_inputs(model, config, lm_eval_inputs=task_inputs(config)),
        )
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

    from rich.console import Console

    from ablation.pipeline import ablate as run_ablate
    from ablation.render import stdout_console

    stderr = Console(stderr=True)
    from induction.io import claim_outputs
    from induction.loading import load_model

    with claim_outputs([out, plot]):  # held for the whole run: one writer per output
        loaded = load_model(  # thread policy
            model, device=device, dtype=dtype, threads=threads, trust_remote_code=trust_remote_code
        )
        try:
            result = run_ablate(
                loaded,
                config,
                progress=not quiet,
                log=None
                if quiet
                else (lambda m: stderr.print(m, markup=False, highlight=False, soft_wrap=True)),
            )
        except KeyboardInterrupt:
            kept = (
                "nothing is kept (--no-cache)"
                if no_cache
                else "finished results are kept in the resume cache; rerun the same command "
                "to resume"
            )
            stderr.print(f"interrupted: no report written; {kept}", markup=False, soft_wrap=True)
            raise typer.Exit(130) from None
        result.print(console=stdout_console())
        if out is not None:
            result.save(out)
        if plot is not None:
            result.plot(plot)
        mean = result.mean_drop
        if mean is not None and not quiet:
            row = result.report[result.report.task == "MEAN"].iloc[0]
            stderr.print(
                f"mean drop over generation tasks: {mean:+.3f} "
                f"(random controls {row.ctrl_mean:+.3f} ± {row.ctrl_std:.3f}, p {row.p_ctrl:.2f})",
                markup=False,
                highlight=False,
            )
        if not quiet:
            for line in [*result.gate_lines(), f"verdict: {result.verdict()}"]:
                stderr.print(line, markup=False, highlight=False, soft_wrap=True)


def tasks(
    suite: Annotated[
        str | None, typer.Argument(help="A suite (zoo, words, paper19, regbench, gsm8k).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the records as JSON.")] = False,
) -> None:
    """List the task records of the built-in suites: group, metric, shots, source, format."""
    import json

    from ablation.tasks import catalog, suite_specs

    specs = suite_specs(suite) if suite else catalog()
    if as_json:
        typer.echo(json.dumps([s.to_dict() for s in specs], indent=2))
        return
    from rich.table import Table

    from ablation.render import stdout_console

    table = Table(title="Task records" + (f" of suite {suite}" if suite else ""))
    for col in ("suite", "task", "group", "metric", "shots", "source"):
        table.add_column(col)
    for s in specs:
        name = f"{s.name} †" if s.positive_control else s.name
        table.add_row(s.suite, name, s.group, s.metric, str(s.shots), s.source)
    table.caption = "† positive control (induction by construction): not in the means"
    stdout_console().print(table)
