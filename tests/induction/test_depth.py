"""Depth angles (induction.depth) against a direct numpy computation on a zoo model."""

import numpy as np
import pytest
import torch

from induction import load_model
from induction.depth import depth_angles, depth_figure, text_tokens
from induction.errors import InputError


def _numpy_angles(states):
    """states [L+1, tokens, d] -> per-layer (mean, sd) of both angles, in numpy."""

    def ang(a, b):
        cos = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
        return np.degrees(np.arccos(np.clip(cos, -1, 1)))

    state = np.stack([ang(states[i], states[i + 1]) for i in range(len(states) - 1)])
    d = np.diff(states, axis=0)
    update = np.stack([ang(d[i], d[i + 1]) for i in range(len(d) - 1)])
    return state.mean(1), state.std(1, ddof=1), update.mean(1), update.std(1, ddof=1)


def test_depth_angles_match_numpy_on_hidden_states():
    loaded = load_model("dense-s0", device="cpu")
    tokens = torch.randint(4, 128, (3, 20), generator=torch.Generator().manual_seed(1))
    got = depth_angles(loaded, tokens=tokens, chunk=2)  # two chunks: the sums must add up
    hf = loaded.hf_model
    last = {}
    handle = hf.model.layers[-1].register_forward_hook(lambda m, i, o: last.update(h=o))
    try:
        with torch.no_grad():
            out = hf(tokens, output_hidden_states=True)
    finally:
        handle.remove()
    h_last = last["h"][0] if isinstance(last["h"], tuple) else last["h"]
    # hidden_states[:L] are the inputs of the L layers; the last one is after the final norm
    states = [s for s in out.hidden_states[: loaded.info.n_layers]] + [h_last]
    states = np.stack([s[:, 1:].reshape(-1, s.shape[-1]).double().numpy() for s in states])
    s_mean, s_std, u_mean, u_std = _numpy_angles(states)
    assert got.n_tokens == 3 * 19
    np.testing.assert_allclose(got.state_mean, s_mean, atol=1e-4)
    np.testing.assert_allclose(got.state_std, s_std, atol=1e-3)
    np.testing.assert_allclose(got.update_mean, u_mean, atol=1e-4)
    np.testing.assert_allclose(got.update_std, u_std, atol=1e-3)
    df = got.to_frame()
    assert len(df) == 8 + 7 and set(df["angle"]) == {"state", "update"}
    assert depth_figure([got, got]).data  # two models overlaid


def test_depth_angles_on_text_and_scan_prompts(tmp_path):
    loaded = load_model("dense-s0", device="cpu")
    text = "the cat sat on the mat and the dog sat on the log " * 6
    tokens = text_tokens(loaded.tokenizer, text)
    assert tokens.shape[0] == 1 and tokens.shape[1] > 10
    a = depth_angles(loaded, text=text)
    assert a.n_tokens == tokens.shape[1] - 1
    b = depth_angles(loaded, batch=2)
    assert all(0 <= x <= 180 for x in b.state_mean + b.update_mean)
    with pytest.raises(InputError, match="fewer than 3 tokens"):
        depth_angles(loaded, text="the")
