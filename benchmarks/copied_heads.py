"""What the heads growth copied become, per grown model (issue #41 item 6; docs/zoo.md).

    python benchmarks/copied_heads.py [MODEL ...]   # default: grown8c-s0 grown8ce-s0

For each grown zoo model that ships its checkpoint series, writes
``benchmarks/results/copied_heads/<model>.csv`` (every copied head's induction and
previous-token scores at each checkpoint from its copy on,
:func:`induction.dynamics.copies.copies_table`) and ``<model>_classes.csv`` (its role at the
copy and now, and the class, :func:`induction.dynamics.copies.classify`), and prints the
class counts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from induction.dynamics.copies import classify, copies_table  # noqa: E402
from induction.io import atomic_path  # noqa: E402
from induction.zoo.registry import zoo_path  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "copied_heads"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", default=["grown8c-s0", "grown8ce-s0"])
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    for name in args.models:
        table = copies_table(zoo_path(name))
        classes = classify(table)
        for frame, path in ((table, OUT / f"{name}.csv"), (classes, OUT / f"{name}_classes.csv")):
            with atomic_path(path) as tmp:
                frame.to_csv(tmp, index=False)
            print(f"wrote {path.relative_to(ROOT)}")
        print(name, classes["class"].value_counts().to_dict())


if __name__ == "__main__":
    main()
