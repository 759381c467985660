"""Config fields that carry their command-line option: declared once, next to the setting.

A job's frozen config dataclass is the one place a setting lives: its type, its default, its
validation and, through :func:`option`, its flag and help text. ``induction.commands.
config_options`` builds a command's options from these fields, so the CLI restates none of them
(the way ``dataclasses.field`` metadata is meant to be used: read by tools, ignored by the
class). A field without option metadata is not on the command line (``progress``, ``max_rows``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import Field, field
from typing import Any

from induction.errors import InputError

#: Metadata keys read by ``induction.commands.config_options``.
HELP = "cli_help"
FLAGS = "cli_flags"
PARSE = "cli_parse"  # text -> field value, for a field the command line spells as text
CLI_DEFAULT = "cli_default"  # the command line's own default, where it differs from the field's
CLI_TYPE = "cli_type"  # what the command line reads, for a field typed wider (a path or a table)
METAVAR = "cli_metavar"


def option(
    default: Any,
    help: str,
    *flags: str,
    parse: Callable[[str], Any] | None = None,
    cli: Any = dataclasses.MISSING,
    cli_type: Any = None,
    metavar: str | None = None,
) -> Any:
    """A dataclass field with ``default`` whose command-line option says ``help``.

    ``flags``: the option's names (default ``--field-name``); a boolean may be spelt
    ``"--on/--off"``, a tuple-valued field takes the option once per value (``--task a
    --task b``). ``parse``: the option is read as text and turned into the value by it
    (``--seeds 3`` or ``--seeds 0,1,2``). ``cli``: the command line's default where it is
    not the field's (``induction scan`` measures the loss unless ``--no-loss``; a parsed
    option's default as the text a user would type). ``cli_type``: the type the command line
    reads where the field takes more from Python (a path where a DataFrame may also be
    given); ``metavar``: the value's name in ``--help``."""
    metadata = {HELP: help, FLAGS: flags, PARSE: parse, CLI_TYPE: cli_type, METAVAR: metavar}
    if cli is not dataclasses.MISSING:
        metadata[CLI_DEFAULT] = cli
    return field(default=default, metadata=metadata)


def option_fields(config_cls: type) -> list[Field]:
    """The fields of ``config_cls`` that are command-line options, in declaration order."""
    from dataclasses import fields

    return [f for f in fields(config_cls) if HELP in f.metadata]


def flags_of(f: Field) -> tuple[str, ...]:
    """The option names of field ``f``: its declared flags, or ``--field-name``."""
    return tuple(f.metadata.get(FLAGS) or ()) or ("--" + f.name.replace("_", "-"),)


#: Where a model loads and in which precision: every command's ``--device``/``--dtype``.
DEVICE_HELP = "auto (CUDA when present, else CPU), cpu, cuda, cuda:N."
DTYPE_HELP = "float32 (default), bfloat16 or float16."

# --------------------------------------------------------------------------- prompts
# The repeated-random-token prompts ``[BOS] + r + r`` that every head-level job draws: the
# same three settings, spelt the same way by every config and command.

SEQ_LEN_HELP = (
    "Length T of the random block r in [BOS] + r + r (default: the model's, 32 for zoo "
    "models, 50 otherwise)."
)
PROMPT_BATCH_HELP = "Prompts per seed."
SEEDS_HELP = (
    "Prompt seeds: a count n (seeds 0..n-1) or a list 0,1,2. Each seed draws --batch prompts; "
    "the spread over seeds is the ± column. (Commands with one random stream take --seed; "
    "`ablate --prompt-seeds N` repeats with seeds seed..seed+N-1.)"
)


#: Largest prompt seed (torch generators take 64-bit seeds) and most seeds a count may ask for.
MAX_SEED = 2**63 - 1
MAX_SEED_COUNT = 10_000


def normalize_seeds(seeds: int | Sequence[int]) -> tuple[int, ...]:
    """An int ``n`` means seeds ``0 .. n-1``; a sequence is used as given (duplicates refused)."""
    if isinstance(seeds, bool):
        raise InputError("seeds must be a count or a list of integers")
    if isinstance(seeds, int):
        if seeds < 1:
            raise InputError(f"need at least one prompt seed, got {seeds}")
        if seeds > MAX_SEED_COUNT:
            raise InputError(
                f"{seeds} prompt seeds is too many (at most {MAX_SEED_COUNT}); "
                "give a smaller count or a list of seeds"
            )
        return tuple(range(seeds))
    out = tuple(int(s) for s in seeds)
    if not out:
        raise InputError("need at least one prompt seed")
    if len(set(out)) != len(out):
        raise InputError(f"duplicate prompt seeds in {list(out)}")
    if any(s < 0 for s in out):
        raise InputError(f"prompt seeds must be >= 0, got {list(out)}")
    if any(s > MAX_SEED for s in out):
        big = next(s for s in out if s > MAX_SEED)
        raise InputError(f"prompt seed {big} is too large; seeds must be in 0..{MAX_SEED}")
    return out


def parse_seeds(text: str) -> int | tuple[int, ...]:
    """``"3"`` -> 3 (seeds 0..2), ``"0,1,2"`` -> (0, 1, 2); one-line error otherwise."""
    try:
        if "," in text:
            return tuple(int(x) for x in text.split(",") if x.strip())
        return int(text)
    except ValueError:
        raise InputError(
            f"--seeds {text!r}: give a count (3) or comma-separated integers (0,1,2)"
        ) from None


def seq_len_option() -> Any:
    return option(None, SEQ_LEN_HELP)


def prompt_batch_option(default: int = 8) -> Any:
    return option(default, PROMPT_BATCH_HELP, "--batch")


def seeds_option(default: int = 1) -> Any:
    return option(default, SEEDS_HELP, parse=parse_seeds)
