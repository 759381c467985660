"""``induction circuits`` and ``induction effects``: induction circuits and per-head causality."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from induction.circuits.config import CircuitsConfig, EffectsConfig
from induction.commands.config_options import config_command
from induction.commands.options import (
    DEFAULT_MODEL,
    DeviceOpt,
    DtypeOpt,
    ModelArg,
    OutOpt,
    figure_opt,
)
from induction.errors import InputError

ThreadsOpt = Annotated[
    int | None, typer.Option("--threads", help="CPU threads for torch (default: torch's).")
]


def _common(out: Path | None, plot: Path | None, threads: int | None) -> None:
    from induction.store.io import TABLE_SUFFIXES, check_output_path

    if threads is not None and threads < 1:
        raise InputError(f"--threads must be >= 1, got {threads}")
    check_output_path(out, TABLE_SUFFIXES, "--out")
    if plot is not None and plot.suffix.lower() not in (".html", ".png"):
        raise InputError(f"--plot {plot}: use a .html or .png file name")


@contextmanager
def _claimed(model: str, outputs: dict) -> Iterator[None]:
    """Before any work: no output over an input (the model's files); then every output is
    claimed until the block ends, so a concurrent run to one of them fails at once naming
    this run's pid. Stale temporaries of earlier killed runs are cleaned on claiming."""
    from induction.models.specs import model_inputs
    from induction.store.io import check_outputs, claim_outputs

    check_outputs(outputs, model_inputs(model))
    with claim_outputs(outputs.values()):  # held for the whole run: one writer per output
        yield


def _load(model: str, device: str, dtype, threads):
    """The model, loaded under a progress phase (a line in a log when it takes over 2 s)."""
    from induction.models.loading import load_model
    from induction.progress import phase

    with phase(f"loading {model}"):
        return load_model(model, device=device, dtype=dtype, threads=threads)  # thread policy


def _draw(result, plot: Path) -> None:
    """``result.plot(plot)`` under a progress phase (a PNG can take a few seconds)."""
    from induction.progress import phase

    with phase(f"drawing {plot}"):
        result.plot(plot)


@config_command(CircuitsConfig, progress=True)
def circuits(
    model: ModelArg = DEFAULT_MODEL,
    config: CircuitsConfig = CircuitsConfig(),
    partners: Annotated[
        int, typer.Option("--partners", help="Partners shown per induction head.")
    ] = 3,
    out: OutOpt = None,
    graph: Annotated[
        Path | None,
        typer.Option(
            "--graph",
            help="Circuit lineage graph of a grown model (.graphml/.gexf/.json/.dot/.html).",
        ),
    ] = None,
    plot: Annotated[Path | None, figure_opt("K-composition against the causal drop")] = None,
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = None,
    threads: ThreadsOpt = None,
) -> None:
    """Find each induction head's partners among earlier heads: K-composition from the
    weights and the drop of its score when a partner is ablated (whole output, and only on
    the path into its keys); for a grown model, trace the circuits to their ancestors."""
    from lineage.export import SUFFIXES as GRAPH_SUFFIXES

    _common(out, plot, threads)
    if partners < 1:
        raise InputError(f"--partners must be >= 1, got {partners}")
    if graph is not None and graph.suffix.lower() not in GRAPH_SUFFIXES:
        raise InputError(f"--graph {graph}: use one of {', '.join(GRAPH_SUFFIXES)}")
    with _claimed(model, {"--out": out, "--plot": plot, "--graph": graph}):
        from induction.circuits.job import induction_circuits

        loaded = _load(model, device, dtype, threads)
        result = induction_circuits(loaded, config)
        print_circuits(result, partners)
        if out is not None:
            result.save(out)
            typer.echo(f"wrote {out}", err=True)
        if plot is not None:
            _draw(result, plot)
            typer.echo(f"wrote {plot}", err=True)
        if graph is not None:
            if result.lineage is None:
                typer.echo("note: no duplication log: no circuit lineage graph written", err=True)
            else:
                result.lineage.export(graph)
                typer.echo(f"wrote {graph}", err=True)


def print_circuits(result, partners: int = 3) -> None:
    a = result.summary()
    typer.echo(
        f"{result.model}: {len(result.heads)} induction head(s)"
        + (f" (top {result.top})" if result.top else f" (score >= {result.threshold})")
        + f"; prompts T={a['seq_len']}, {a['batch']} per seed, seeds {a['seeds']}; "
        f"ablation {a['mode']} (reference {a['reference']})"
    )
    typer.echo(
        f"K-composition baseline (random matrices of the same shapes): "
        f"{result.baseline[0]:.3f} ± {result.baseline[1]:.3f}"
    )
    typer.echo(f"key path: {result.key_path_note}")
    if not result.heads:
        typer.echo("no induction heads at this threshold; try --top 3")
        return
    df = result.table
    typer.echo(
        "null patch (the same passes, nothing patched; should be 0): largest |drop| "
        f"{df['drop_null'].abs().max():.1e}, |drop (keys)| {df['drop_key_null'].abs().max():.1e}"
    )
    header = (
        f"  {'partner':<8} {'prev-tok':>8} {'K-comp':>7} {'-base':>7} {'K rank':>6} "
        f"{'drop':>14} {'drop (keys)':>14}"
    )
    df = result.table
    for head in result.heads:
        rows = df[(df["layer"] == head[0]) & (df["head"] == head[1])]
        rows = rows.sort_values("partner_rank").head(partners)
        first = rows.iloc[0]
        typer.echo(
            f"\n{first['induction_head']}  induction {first['induction_head_score']:.3f}  "
            f"(score on these prompts {first['clean_score']:.3f})"
        )
        typer.echo(header)
        for r in rows.itertuples(index=False):
            typer.echo(
                f"  {r.partner:<8} {r.partner_prev_token:>8.3f} {r.k_comp:>7.3f} "
                f"{r.k_comp_excess:>+7.3f} {r.k_comp_rank:>6d} "
                f"{r.drop:>7.3f} ± {r.drop_se:<5.3f}"
                + (
                    f" {r.drop_key:>7.3f} ± {r.drop_key_se:<5.3f}"
                    if r.drop_key == r.drop_key
                    else ""
                )
            )
    if result.lineage is not None:
        typer.echo(f"\ncircuit lineage: {result.lineage.headline()}")
        for g in result.lineage.summary()["groups"]:
            was = {True: "a circuit before growth", False: "not a circuit before growth"}.get(
                g["was_circuit"], "before growth unknown"
            )
            typer.echo(f"  {g['ancestor_pair']} ({was}) -> {', '.join(g['circuits'])}")


@config_command(EffectsConfig, scores=True, progress=True)
def effects(
    model: ModelArg = DEFAULT_MODEL,
    config: EffectsConfig = EffectsConfig(),
    top: Annotated[int, typer.Option("--top", help="Heads shown in the table.")] = 15,
    out: OutOpt = None,
    plot: Annotated[Path | None, figure_opt("Layer x head heatmaps")] = None,
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = None,
    threads: ThreadsOpt = None,
) -> None:
    """Ablate every head alone (batched) and report its effect on the in-context loss of
    repeated tokens; compare with attribution patching."""
    _common(out, plot, threads)
    if top < 1:
        raise InputError(f"--top must be >= 1, got {top}")
    with _claimed(model, {"--out": out, "--plot": plot}):
        from induction.circuits.effects import head_effects

        loaded = _load(model, device, dtype, threads)
        result = head_effects(loaded, config)
        df = result.to_frame().sort_values("rank").head(top)
        s = result.summary()
        typer.echo(
            f"{result.model}: effect of ablating each head alone ({result.mode}, reference "
            f"{result.reference}) on the second-copy loss; clean loss "
            f"{result.clean_loss:.3f} nats; T={s['seq_len']}, {s['batch']} per seed, "
            f"seeds {s['seeds']}"
        )
        typer.echo(
            f"{'rank':>4} {'head':>6} {'effect':>16} {'AtP':>8} {'induction':>9} {'prev-tok':>8}"
        )
        for r in df.itertuples(index=False):
            typer.echo(
                f"{r.rank:>4} {'L%dH%d' % (r.layer, r.head):>6} "
                f"{r.effect:>8.3f} ± {r.effect_se:<5.3f}"
                + (f" {r.atp:>8.3f}" if config.atp else f" {'':>8}")
                + f" {getattr(r, 'induction', float('nan')):>9.3f}"
                + f" {getattr(r, 'previous_token', float('nan')):>8.3f}"
            )
        if result.effect_null is not None:
            typer.echo(
                "null patch (the same passes, nothing ablated; should be 0): largest |effect| "
                f"{float(result.effect_null.abs().max()):.1e}"
            )
        t = result.timing
        line = f"time: clean {t['clean_s']:.2f}s, all heads ablated {t['ablation_s']:.2f}s"
        if result.corr:
            line += f", AtP {t['atp_s']:.2f}s"
            typer.echo(
                f"AtP vs ablation over {result.effect.numel()} heads: Pearson "
                f"{result.corr['pearson']:.3f}, Spearman {result.corr['spearman']:.3f}"
            )
        typer.echo(line)
        if out is not None:
            result.save(out)
            typer.echo(f"wrote {out}", err=True)
        if plot is not None:
            _draw(result, plot)
            typer.echo(f"wrote {plot}", err=True)
