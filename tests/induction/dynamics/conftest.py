"""A tiny fixed-protocol lidas8 run (4 -> 8 layers, growth at step 10) trained once."""

import pytest


def fixed(preset, **kw):
    from induction.training.protocol import preset_config

    phases = [
        {"at": 0.0, "mix": {"copy": 0.8, "bigram": 0.2}, "seq_len": 24, "max_span": 6},
        {"at": 0.5, "mix": {"copy": 0.5, "lookup": 0.5}, "seq_len": 24, "max_span": 8},
    ]
    base = dict(d_model=16, d_mlp=32, batch=2, steps=30, warmup=3, eval_every=10)
    base.update(phases=phases, first_checkpoint=10, eval_distance=6, repeat_len=6)
    return preset_config(preset, **{**base, **kw})


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    from induction.training.protocol import train_fixed

    out = tmp_path_factory.mktemp("runs") / "lidas8-s0"
    train_fixed(fixed("lidas8"), out=out, progress=False)
    return out
