"""Rich rendering of a lineage trace (what ``induction lineage`` prints).

It reads a trace through :class:`TraceView`, the fields rendering needs, so it sits below
:mod:`lineage.api` whose :class:`~lineage.api.TraceResult` has them (``result.print()``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from lineage.ancestry import Lineage
    from lineage.infer import InferredLineage
    from lineage.summary import LineageSummary


class TraceView(Protocol):
    """What rendering reads of a trace; :class:`lineage.api.TraceResult` is one."""

    model: Any  # has .name
    lineage: Lineage
    summary: LineageSummary
    inferred: InferredLineage | None
    agreement: dict | None
    written: list[Path]
    scores_source: str


def print_trace(result: TraceView, console: Console | None = None) -> None:
    """Header, headline, top-heads and ancestors tables, inference lines, notes, files."""
    from rich.console import Console

    given = console is not None
    console = console or Console()
    s = result.summary
    console.print(header(result))
    console.print(f"[bold]{s.sentence}[/bold]")
    console.print(s.detail)
    console.print(top_table(s))
    console.print(ancestor_table(s))
    for line in inference_lines(result):
        console.print(line)
    from induction.store.io import wrote

    # diagnostics to stderr, results to stdout (a console passed in gets both)
    err = console if given else Console(stderr=True)
    for note in s.notes:
        err.print(f"note: {note}")
    for p in result.written:
        err.print(wrote(p))


def header(result: TraceView) -> str:
    lin = result.lineage
    source = "inferred from weights" if result.inferred is not None else lin.source
    depths = " -> ".join(map(str, lin.depths))
    return (
        f"[bold]{result.model.name}[/bold]: {lin.final_depth} layers x {lin.n_heads} heads; "
        f"lineage: {source} ({depths} layers); scores: {result.scores_source}"
    )


def top_table(s) -> Table:
    """The top heads: rank, head, score, ancestor(s), path through the stages; a head that
    writes nothing (output norm ~0, :mod:`induction.scores.output_norm`) is marked "(silent)"."""
    from rich.table import Table

    t = Table(title=f"Top {s.n_top} heads by {s.score}", title_justify="left")
    for col in ("rank", "head", s.score, "ancestor", "path (layers by stage)"):
        t.add_column(col, justify="right" if col in ("rank", s.score) else "left")
    for r in s.top.itertuples(index=False):
        label = r.label + (" (silent)" if getattr(r, "silent", False) else "")
        t.add_row(str(r.rank), label, f"{getattr(r, s.score):.3f}", r.ancestors, r.path)
    return t


def ancestor_table(s) -> Table:
    """One row per ancestor of the top heads; with initial scores, its own score."""
    from rich.table import Table

    a = Table(
        title=f"Ancestors (stage {s.ancestor_stage}) of the top {s.n_top}", title_justify="left"
    )
    a.add_column("ancestor")
    a.add_column("top", justify="right")
    a.add_column("desc.", justify="right")
    a.add_column("mean", justify="right")
    has_init = "ancestor_score" in s.ancestors.columns
    if has_init:
        a.add_column("own (IH?)", justify="right")
    a.add_column(f"top descendants ({s.score})")
    for r in s.ancestors.itertuples(index=False):
        row = [r.ancestor, str(r.n_top), str(r.n_descendants), f"{r.score_mean:.3f}"]
        if has_init:
            own = r.ancestor_score
            flag = r.was_induction_head
            mark = "" if flag is None else (" yes" if flag else " no")
            row.append("-" if own != own else f"{own:.3f}{mark}")
        row.append(r.descendants.replace("; ", ", "))
        a.add_row(*row)
    return a


def inference_lines(result: TraceView) -> list[str]:
    """With --infer: the inferred families and confidence, and the agreement with the log."""
    lines = []
    if result.inferred is not None:
        inf = result.inferred
        conf = inf.confidence
        lines.append(
            f"inferred: {inf.n_families} ancestor layers, families {inf.families}, confidence "
            f"min {min(conf):.2f} / mean {sum(conf) / len(conf):.2f} "
            f"(threshold {inf.threshold:.3f})"
        )
    if result.agreement is not None:
        ag = result.agreement
        lines.append(
            f"agreement with the duplication log: partition "
            f"{'equal' if ag['partition_equal'] else 'DIFFERENT'}, layers "
            f"{ag['layer_agreement']:.0%}, pairs {ag['pair_agreement']:.0%}"
        )
    return lines
