"""``induction replicate``: the source's induction-head claims on the zoo, with validity gates
(:mod:`induction.replication`; method and results: docs/research.md, docs/results.md).

The replication keeps its own argument parser (``induction replicate --help`` lists every
option); this command hands it the arguments unchanged.
"""

from __future__ import annotations

import typer


def replicate(ctx: typer.Context) -> None:
    """Replicate the source's claims on the zoo: dense vs LIDAS vs looped (--help: options)."""
    from induction.replication.cli import main

    raise typer.Exit(main(list(ctx.args), command="induction replicate"))


#: Every argument, --help included, goes to the replication's own parser.
replicate.command_settings = {  # type: ignore[attr-defined]
    "context_settings": {
        "allow_extra_args": True,
        "ignore_unknown_options": True,
        "help_option_names": [],
    },
    "add_help_option": False,
}
