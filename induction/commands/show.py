"""``induction show``: attention patterns of chosen heads as a self-contained HTML page.

Keep imports light here: ``induction --help`` imports this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from induction.commands.options import (
    DEFAULT_MODEL,
    DeviceOpt,
    DtypeOpt,
    ModelArg,
    SeqLenOpt,
    TrustRemoteCodeOpt,
)
from induction.errors import InputError, WorkbenchError


def show(
    model: ModelArg = DEFAULT_MODEL,
    heads: Annotated[
        str, typer.Option("--heads", help="Heads to show, e.g. L5H1,L11H2 (layer, head from 0).")
    ] = "",
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Output .html (interactive, plotly.js embedded) or .png file."
        ),
    ] = Path("view.html"),
    prompt: Annotated[
        str | None,
        typer.Option(
            "--prompt", help="Text to run; default: one seeded repeated-random-token prompt."
        ),
    ] = None,
    seq_len: SeqLenOpt = None,
    seed: Annotated[int, typer.Option("--seed", help="Random prompt: its seed.")] = 0,
    layout: Annotated[
        str, typer.Option("--layout", help="dropdown (one heatmap, a menu of heads) or grid.")
    ] = "dropdown",
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
) -> None:
    """Write each head's attention pattern with token labels and the induction stripe."""
    from induction.figures.plots import FIGURE_SUFFIXES

    if not heads.strip():
        raise InputError("pass --heads, e.g. --heads L5H1,L11H2")
    if out.suffix.lower() not in FIGURE_SUFFIXES:
        raise InputError(f"--out {out}: use an .html or .png file name")
    if out.is_dir():
        raise InputError(f"--out {out} is a folder; pass a file path")
    if prompt is not None and not prompt.strip():
        raise InputError("empty prompt: pass some text to --prompt, or leave --prompt out")
    if prompt is not None:
        try:
            prompt.encode("utf-8")
        except UnicodeEncodeError as e:  # bytes the shell passed that are not UTF-8
            raise InputError(
                f"--prompt is not UTF-8 text (bad byte at character {e.start}); pass UTF-8 text"
            ) from None
    from induction.figures.plots import FIGURE_SUFFIXES, save_figure
    from induction.models.specs import model_inputs
    from induction.store.io import check_output_path, check_outputs, claim_output, wrote

    check_output_path(out, FIGURE_SUFFIXES, "--out")
    _check_heads(model, heads)
    check_outputs({"--out": out}, model_inputs(model))
    with claim_output(out):  # held for the whole run: one writer per output
        from induction.models.loading import load_model
        from induction.progress import phase
        from induction.scores.views import LAYOUTS, show_patterns

        if layout not in LAYOUTS:  # show_patterns' own check, made before the model loads
            raise InputError(f"unknown layout {layout!r}; use dropdown or grid")
        with phase(f"loading {model}"):
            loaded = load_model(
                model, device=device, dtype=dtype, trust_remote_code=trust_remote_code
            )
        with phase(f"drawing {out}"):
            fig = show_patterns(loaded, heads, prompt, seq_len=seq_len, seed=seed, layout=layout)
            note = save_figure(fig, out)
    if note:
        raise InputError(note)
    # plotly has no stubs and infers Figure.layout as a Figure; it is a go.Layout
    meta = fig.layout.meta  # pyright: ignore[reportAttributeAccessIssue]
    typer.echo(f"{wrote(out)} ({', '.join(meta['heads'])}; {meta['tokens']} tokens)", err=True)


def _check_heads(model: str, heads: str) -> None:
    """Refuse a malformed or out-of-range ``--heads`` before the model loads. A zoo model's or
    checkpoint folder's range comes from its config.json (the unrolled depth of a looped
    model); any other model is checked for syntax here and for range once loaded."""
    import sys

    from induction.models.specs import resolve_spec
    from induction.scores.views import parse_heads

    spec = resolve_spec(model)  # an unknown model fails here as it would in load_model
    n_layers = n_heads = sys.maxsize
    if spec.folder is not None:
        from induction.models.checkpoint import read_config_facts

        try:
            facts = read_config_facts(spec.folder)
            n_layers, n_heads = facts.n_layers, facts.n_heads or sys.maxsize
        except WorkbenchError:  # a config or loop plan it cannot read: load_model says why
            pass
    parse_heads(heads, n_layers, n_heads)
