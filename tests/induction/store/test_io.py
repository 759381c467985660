"""Atomic output writing and the refuse-to-overwrite-an-input guard."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from induction.errors import InputError
from induction.store.io import (
    atomic_path,
    read_table,
    refuse_overwrite_input,
    write_json,
    write_table,
    write_text,
)


def test_failed_write_leaves_old_file_and_no_temp(tmp_path):
    target = tmp_path / "out.txt"
    write_text(target, "old")

    def boom(fh):
        fh.write("half of the new conte")
        raise RuntimeError("disk full")

    from induction.store.io import atomic_write

    with pytest.raises(RuntimeError):
        atomic_write(target, boom)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_failed_table_write_leaves_nothing(tmp_path):
    class Unwritable(pd.DataFrame):
        def to_csv(self, *a, **k):
            raise OSError("no")

    with pytest.raises(OSError):
        write_table(Unwritable({"a": [1]}), tmp_path / "t.csv")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".json", ".jsonl"])
def test_table_round_trip(tmp_path, suffix):
    df = pd.DataFrame({"layer": [0, 1], "head": [2, 3], "score": [0.5, 0.25]})
    path = write_table(df, tmp_path / "sub" / f"scores{suffix}")
    pd.testing.assert_frame_equal(read_table(path), df)
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_unknown_table_suffix(tmp_path):
    with pytest.raises(InputError, match=r"\.csv, \.parquet, \.json, \.jsonl"):
        write_table(pd.DataFrame({"a": [1]}), tmp_path / "scores.xlsx")


def test_write_json_numpy(tmp_path):
    import numpy as np

    path = write_json(tmp_path / "x.json", {"a": np.float32(0.5), "b": np.arange(3)})
    assert json.loads(path.read_text()) == {"a": 0.5, "b": [0, 1, 2]}


def test_atomic_path_replaces(tmp_path):
    target = tmp_path / "f.bin"
    with atomic_path(target) as tmp:
        assert tmp.parent == tmp_path and tmp != target
        tmp.write_bytes(b"abc")
    assert target.read_bytes() == b"abc"


def test_refuse_overwrite_input(tmp_path, monkeypatch):
    inp = tmp_path / "log.json"
    inp.write_text("{}")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="is an input"):
        refuse_overwrite_input("./sub/../log.json", inp)
    link = tmp_path / "link.json"
    link.symlink_to(inp)
    with pytest.raises(InputError):
        refuse_overwrite_input(link, inp)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    with pytest.raises(InputError):
        refuse_overwrite_input(ckpt / "config.json", ckpt)
    refuse_overwrite_input(tmp_path / "other.json", inp, None, ckpt)  # fine
    refuse_overwrite_input(None, inp)
