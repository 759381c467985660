"""Replicate the source's induction-head claims on the zoo: dense vs LIDAS vs looped.

    python benchmarks/replication.py --fast              # = induction replicate --fast

The replication is the installed package :mod:`induction.replication` behind
``induction replicate``; this file keeps the command the generated docs blocks name, and
:func:`main` runs that same command (:mod:`induction.commands.replicate`) under this name.
"""

from __future__ import annotations

from induction.commands.replicate import main  # noqa: F401
from induction.replication import *  # noqa: F403
from induction.replication import __all__  # noqa: F401

if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
