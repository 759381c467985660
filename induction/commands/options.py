"""Reusable option and argument types for ``induction`` commands.

Use them as annotations so every command spells the common options the same way::

    from induction.commands.options import DeviceOpt, DtypeOpt, ModelArg, OutOpt, SeedOpt

    def scan(model: ModelArg = DEFAULT_MODEL, device: DeviceOpt = "auto", dtype: DtypeOpt = None,
             seed: SeedOpt = 0, out: OutOpt = None) -> None: ...

Keep this module free of heavy imports (torch, transformers): ``induction --help`` imports it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from typer.models import OptionInfo

from induction.config_fields import (
    DEVICE_HELP,
    DTYPE_HELP,
    PROMPT_BATCH_HELP,
    SEEDS_HELP,
    SEQ_LEN_HELP,
)
from induction.models.registry import DEFAULT_MODEL  # noqa: F401  (re-exported)

ModelArg = Annotated[
    str,
    typer.Argument(
        help="Model spec: zoo name (grown8c, dense8c-s1, ...), checkpoint folder, .gguf file, "
        "or hub name. `induction models` lists them.",
        show_default=True,
    ),
]
ModelOpt = Annotated[
    str,
    typer.Option("--model", "-m", help="Model spec (zoo name, folder, .gguf, hub name)."),
]
DeviceOpt = Annotated[
    str,
    typer.Option("--device", help=DEVICE_HELP),
]
DeviceMapOpt = Annotated[
    str | None,
    typer.Option(
        "--device-map", help="Spread a large model over devices, e.g. 'auto' (replaces --device)."
    ),
]
DtypeOpt = Annotated[
    str | None,
    typer.Option("--dtype", help=DTYPE_HELP),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Random seed (prompts, sampling).")]
OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        "-o",
        help="Output file; the format follows the suffix (.csv, .parquet, .json, .jsonl).",
    ),
]
OutDirOpt = Annotated[
    Path | None, typer.Option("--out-dir", help="Folder for output files and figures.")
]
TrustRemoteCodeOpt = Annotated[
    bool,
    typer.Option("--trust-remote-code", help="Allow a checkpoint's own Python code to run."),
]

# --------------------------------------------------------------------------- prompts
# The repeated-random-token prompts ``[BOS] + r + r`` of the commands whose job has no config
# yet; the help is the config fields' (``induction.config_fields``), the default the command's.

SeqLenOpt = Annotated[int | None, typer.Option("--seq-len", help=SEQ_LEN_HELP)]
PromptBatchOpt = Annotated[int, typer.Option("--batch", help=PROMPT_BATCH_HELP)]
SeedsOpt = Annotated[str, typer.Option("--seeds", help=SEEDS_HELP)]


def figure_opt(what: str) -> OptionInfo:
    """The ``--plot`` option of a command whose figure shows ``what``:
    ``plot: Annotated[Path | None, figure_opt(what)] = None`` (a call is no type, so the
    option, not the annotation, is what varies)."""
    return typer.Option("--plot", help=f"{what}: .html (interactive) or .png.")
