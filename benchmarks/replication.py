"""Replicate the source's induction-head claims on the zoo: dense vs LIDAS vs looped.

    python benchmarks/replication.py                     # the shipped zoo, full settings
    python benchmarks/replication.py --fast              # reduced settings (CI, notebooks)
    python benchmarks/replication.py --models-dir runs/zoo2 --out-dir benchmarks/results/zoo2
    python benchmarks/replication.py --readme docs/results.md  # and rewrite its results block
    python benchmarks/replication.py --from-results --readme docs/results.md  # from the JSON

The entry point and import surface (``tests/benchmarks/test_replication.py`` and
``notebooks/04_replication.ipynb`` load this file by path); the code lives in the package
``benchmarks/zoo_replication/`` (models, measure, stats, report, figures, results, cli).
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from zoo_replication import *  # noqa: E402, F403
from zoo_replication import __all__, main  # noqa: E402, F401

if __name__ == "__main__":
    raise SystemExit(main())
