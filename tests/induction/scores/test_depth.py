"""Depth angles (induction.scores.depth) against a direct numpy computation on a zoo model."""

import numpy as np
import pytest
import torch

from induction import load_model
from induction.errors import InputError
from induction.scores.depth import depth_angles, depth_figure, text_tokens


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


def _lab(color: str) -> tuple[float, float, float]:
    """CIELAB (D65) of a ``#rrggbb`` colour."""
    rgb = [int(color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb)
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t):
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def test_figure_draws_each_model_in_a_clearly_distinct_colour():
    """Five families, five colours far apart (the old hue steps drew grown and looped in two
    greens 41 apart in CIELAB); past the palette, lines repeat a colour dashed."""
    import itertools
    import math

    from induction.scores.depth import MODEL_COLORS, DepthAngles

    names = ["dense", "grown", "looped", "lidas", "looped-p", "a", "b", "c"]
    results = [DepthAngles(n, [10.0, 20.0], [1.0, 1.0], [30.0], [2.0], 5) for n in names]
    fig = depth_figure(results)
    shown = [t for t in fig.data if t.showlegend]
    assert [t.name for t in shown] == names
    colors = [t.line.color for t in shown]
    assert colors[:7] == list(MODEL_COLORS) and len(set(colors[:7])) == 7
    for a, b in itertools.combinations(colors[:5], 2):
        assert math.dist(_lab(a), _lab(b)) > 45, (a, b)
    assert shown[7].line.color == colors[0] and shown[7].line.dash != shown[0].line.dash
    for t in fig.data:  # error bars and markers in the line's colour
        assert t.marker.color == t.error_y.color == t.line.color
