"""A plotly figure drawn as a PNG with matplotlib: the static image when kaleido, or the
Chrome/Chromium browser it drives, is missing (:func:`induction.figures.plots.static_png`).

It draws what the workbench's figures use: heatmaps (colour bar, category or numeric axes,
reversed axes), bars (grouped, overlaid or stacked, with error bars), scatter traces (lines,
markers, error bars, colour-mapped markers), ``make_subplots`` and plotly-express facet grids
(from the axes' domains), subplot titles, ``add_hline``/``add_vline`` shapes and their labels,
the title, axis titles, tick labels and the legend. Interactive parts (hover text, dropdown
menus) have no static form: a figure with a menu is drawn as it first appears (its visible
traces). Other trace types raise :class:`UnsupportedFigure`.

Only matplotlib's object API is used (no ``pyplot``), so a notebook's matplotlib backend and
state are left alone.
"""

from __future__ import annotations

import html
import io
import math
import re
import textwrap
from typing import Any

from induction.errors import InputError

TRACE_TYPES = ("heatmap", "bar", "scatter", "scattergl")
PX = 0.75  # points per CSS pixel (72 / 96): plotly sizes are pixels, matplotlib's points
_COLORWAY = ("#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692")
_DASH = {"dash": (0, (5, 3)), "dot": (0, (1, 2)), "dashdot": (0, (5, 2, 1, 2))}
_DASH |= {"longdash": (0, (9, 3)), "longdashdot": (0, (9, 2, 1, 2)), "solid": "-"}
_SYMBOL = {"circle": "o", "square": "s", "diamond": "D", "cross": "P", "x": "X", "star": "*"}
_SYMBOL |= {"triangle-up": "^", "triangle-down": "v", "triangle-left": "<"}
_SYMBOL |= {"triangle-right": ">", "pentagon": "p", "hexagon": "h"}
_ANCHOR = {"left": "left", "right": "right", "center": "center", "auto": "center"}
_VANCHOR = {"top": "top", "bottom": "bottom", "middle": "center", "auto": "center"}


class UnsupportedFigure(InputError):
    """A figure with a trace type the matplotlib fallback does not draw."""


def render_png(fig: Any, scale: float = 2) -> bytes:
    """``fig`` (a plotly figure) as PNG bytes, ``layout.width`` x ``layout.height`` pixels
    (plotly's 700 x 500 when unset) times ``scale``."""
    from matplotlib import rc_context

    with rc_context(
        {"font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8}
    ):
        return _Renderer(fig, scale).png()


def plain(text: Any) -> str:
    """Plotly's HTML-ish label text as plain text: ``<br>`` a new line, its other tags
    (``<sup>``, ``<b>``, ...) dropped, entities decoded."""
    if text is None:
        return ""
    text = re.sub(r"<br\s*/?>", "\n", str(text), flags=re.I)
    # only plotly's own tags: a token such as <|endoftext|> is text
    text = re.sub(r"</?(?:b|i|em|s|u|sup|sub|span|a)(?:\s[^>]*)?>", "", text, flags=re.I)
    return html.unescape(text).strip()


class _Renderer:
    def __init__(self, fig: Any, scale: float):
        from matplotlib.figure import Figure

        self.layout = fig.layout
        template = self.layout.template
        self.template = template
        self.colorway = list(self.layout.colorway or template.layout.colorway or _COLORWAY)
        self.traces = [t for t in fig.data if t.visible not in (False, "legendonly")]
        bad = sorted({t.type for t in self.traces} - set(TRACE_TYPES))
        if bad:
            raise UnsupportedFigure(
                f"cannot draw {', '.join(bad)} traces without kaleido (drawn here: "
                f"{', '.join(TRACE_TYPES)})"
            )
        self.width = float(self.layout.width or 700)
        self.height = float(self.layout.height or 500)
        self.figure = Figure(
            figsize=(self.width / 100, self.height / 100),
            dpi=100 * scale,
            layout="constrained",
            facecolor="white",
        )
        self.axes: dict[tuple[str, str], Any] = {}
        self.categories: dict[str, list] = {}
        self.handles: list[tuple[Any, str]] = []
        self.colorbars: dict[Any, tuple[Any, list, str]] = {}
        self.trace_colors: dict[int, str] = {}

    # ------------------------------------------------------------------ the whole figure

    def png(self) -> bytes:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        self._make_axes()
        self._find_categories()
        for i, t in enumerate(self.traces):
            self.trace_colors[i] = self.colorway[i % len(self.colorway)]
        for (xa, ya), ax in self.axes.items():
            on_axes = [
                (i, t)
                for i, t in enumerate(self.traces)
                if (t.xaxis or "x", t.yaxis or "y") == (xa, ya)
            ]
            for i, t in on_axes:
                if t.type == "heatmap":
                    self._heatmap(ax, t, xa, ya)
            self._bars(ax, [(i, t) for i, t in on_axes if t.type == "bar"], xa, ya)
            for i, t in on_axes:
                if t.type in ("scatter", "scattergl"):
                    self._scatter(ax, i, t, xa, ya)
        self._shapes()
        for (xa, ya), ax in self.axes.items():
            self._style_axis(ax, xa, "x")
            self._style_axis(ax, ya, "y")
        self._annotations()
        self._colorbars()
        self._legend()
        self._title()
        FigureCanvasAgg(self.figure)
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", facecolor="white")
        return buf.getvalue()

    def _axis(self, name: str) -> Any:
        """The layout axis object of a trace reference (``x``, ``y2``)."""
        key = name[0] + "axis" + name[1:]
        return self.layout[key] if key in self.layout else None

    def _make_axes(self) -> None:
        """One matplotlib axes per (x, y) axis pair in use, on a grid read off the domains."""
        pairs: list[tuple[str, str]] = []
        for t in self.traces:
            pair = (t.xaxis or "x", t.yaxis or "y")
            if pair not in pairs:
                pairs.append(pair)
        if not pairs:
            pairs = [("x", "y")]
        dom = {}
        for xa, ya in pairs:
            xd = tuple(self._axis(xa).domain or (0, 1)) if self._axis(xa) else (0, 1)
            yd = tuple(self._axis(ya).domain or (0, 1)) if self._axis(ya) else (0, 1)
            dom[(xa, ya)] = (xd, yd)
        starts = sorted({round(d[0][0], 6) for d in dom.values()})
        tops = sorted({round(d[1][1], 6) for d in dom.values()}, reverse=True)
        widths = [min(d[0][1] for d in dom.values() if round(d[0][0], 6) == s) - s for s in starts]
        heights = [t - max(d[1][0] for d in dom.values() if round(d[1][1], 6) == t) for t in tops]
        grid = self.figure.add_gridspec(
            len(tops),
            len(starts),
            width_ratios=[max(w, 0.05) for w in widths],
            height_ratios=[max(h, 0.05) for h in heights],
        )
        taken: dict[tuple, Any] = {}
        for pair, (xd, yd) in dom.items():
            c0 = starts.index(round(xd[0], 6))
            c1 = max(i for i, s in enumerate(starts) if s < xd[1] - 1e-6) + 1
            r0 = tops.index(round(yd[1], 6))
            r1 = max(i for i, t in enumerate(tops) if t > yd[0] + 1e-6) + 1
            cell = (r0, r1, c0, c1)
            if cell in taken:  # an overlaying axis: share the cell
                self.axes[pair] = taken[cell].twinx()
                continue
            ax = self.figure.add_subplot(grid[r0:r1, c0:c1])
            taken[cell] = ax
            self.axes[pair] = ax
        for (xa, ya), ax in self.axes.items():  # matched axes (shared_xaxes, facets) share
            for letter, name in (("x", xa), ("y", ya)):
                axis = self._axis(name)
                other = self._first_axes(axis.matches, letter) if axis is not None else None
                if other is not None and other is not ax:
                    shared = ax.get_shared_x_axes() if letter == "x" else ax.get_shared_y_axes()
                    if not shared.joined(ax, other):
                        (ax.sharex if letter == "x" else ax.sharey)(other)

    def _first_axes(self, name: str | None, letter: str):
        """The first matplotlib axes drawing plotly axis ``name`` (``x2``), or None."""
        for (xa, ya), ax in self.axes.items():
            if name is not None and (xa if letter == "x" else ya) == name:
                return ax
        return None

    def _find_categories(self) -> None:
        """Category axes: their categories in first-seen order (plotly's ``trace`` order)."""
        values: dict[str, list] = {}
        for t in self.traces:
            for letter in "xy":
                name = t[f"{letter}axis"] or letter
                data = t[letter]
                if data is None:
                    continue
                if t.type == "bar" and letter == ("y" if t.orientation != "h" else "x"):
                    continue
                values.setdefault(name, []).extend(_flat(data))
        for name, vals in values.items():
            axis = self._axis(name)
            kind = axis.type if axis is not None else None
            strings = any(isinstance(v, str) for v in vals if v is not None)
            if kind == "category" or (kind in (None, "-") and strings):
                cats = list(dict.fromkeys(v for v in vals if v is not None))
                if axis is not None and axis.categoryorder == "array" and axis.categoryarray:
                    order = list(axis.categoryarray)
                    cats = order + [c for c in cats if c not in order]
                elif axis is not None and axis.categoryorder == "category ascending":
                    cats = sorted(cats, key=str)
                elif axis is not None and axis.categoryorder == "category descending":
                    cats = sorted(cats, key=str, reverse=True)
                self.categories[name] = cats

    def _pos(self, axis: str, data) -> Any:
        """Plot positions of ``data`` on ``axis``: category indices or floats (None -> nan)."""
        import numpy as np

        cats = self.categories.get(axis)
        if cats is not None:
            index = {c: i for i, c in enumerate(cats)}
            return np.array([index.get(v, np.nan) if v is not None else np.nan for v in data])
        return np.array([np.nan if v is None else v for v in data], dtype=float)

    # ------------------------------------------------------------------ traces

    def _colormap(self, scale, reverse: bool = False):
        from matplotlib.colors import LinearSegmentedColormap, to_rgba

        scale = scale or self.template.layout.colorscale.sequential
        if not scale:
            from matplotlib import colormaps

            return colormaps["viridis_r" if reverse else "viridis"]
        stops = [(float(p), to_rgba(_color(c))) for p, c in scale]
        if reverse:
            stops = [(1 - p, c) for p, c in reversed(stops)]
        return LinearSegmentedColormap.from_list("plotly", stops)

    def _color_range(self, values, lo, hi, mid):
        import numpy as np

        finite = np.asarray(values, dtype=float)
        finite = finite[np.isfinite(finite)]
        if lo is not None and hi is not None:
            return float(lo), float(hi)
        if mid is not None and finite.size:
            span = float(np.max(np.abs(finite - mid))) or 1.0
            return mid - span, mid + span
        low = float(finite.min()) if finite.size else 0.0
        high = float(finite.max()) if finite.size else 1.0
        return (low if lo is None else float(lo)), (high if hi is None else float(hi))

    def _coloraxis(self, name: str | None):
        return self.layout[name] if name and name in self.layout else None

    def _heatmap(self, ax, t, xa: str, ya: str) -> None:
        import numpy as np

        z = np.array([[np.nan if v is None else v for v in row] for row in t.z], dtype=float)
        if z.ndim != 2:
            raise UnsupportedFigure("a heatmap's z must be a 2-D table")
        if t.transpose:
            z = z.T
        ny, nx = z.shape
        xs = self._pos(xa, t.x) if t.x is not None else np.arange(nx, dtype=float)
        ys = self._pos(ya, t.y) if t.y is not None else np.arange(ny, dtype=float)
        cax = self._coloraxis(t.coloraxis)
        src = cax if cax is not None else t
        lo, hi, mid = (
            (src.cmin, src.cmax, src.cmid) if cax is not None else (t.zmin, t.zmax, t.zmid)
        )
        cmap = self._colormap(
            src.colorscale
            or (self.template.data.heatmap[0].colorscale if self.template.data.heatmap else None),
            bool(src.reversescale),
        )
        vmin, vmax = self._color_range(z, lo, hi, mid)
        mesh = ax.pcolormesh(
            _edges(_centers(xs, nx)),
            _edges(_centers(ys, ny)),
            np.ma.masked_invalid(z),
            cmap=cmap,
            vmin=vmin,
            vmax=vmax,
            shading="flat",
        )
        shown = src.showscale is not False
        if shown:
            title = plain(src.colorbar.title.text) if src.colorbar.title else ""
            self._add_colorbar(t.coloraxis or id(t), mesh, ax, title)

    def _add_colorbar(self, key, mappable, ax, title: str) -> None:
        if key in self.colorbars:
            self.colorbars[key][1].append(ax)
        else:
            self.colorbars[key] = (mappable, [ax], title)

    def _bars(self, ax, bars: list, xa: str, ya: str) -> None:
        import numpy as np
        from matplotlib.patches import Patch

        if not bars:
            return
        mode = self.layout.barmode or "group"
        gap = 0.2 if self.layout.bargap is None else self.layout.bargap
        n = len(bars) if mode == "group" else 1
        bottoms: dict[tuple[float, bool], float] = {}
        for k, (i, t) in enumerate(bars):
            horizontal = t.orientation == "h"
            pos_axis, val_axis = (ya, xa) if horizontal else (xa, ya)
            pos_data, val_data = (t.y, t.x) if horizontal else (t.x, t.y)
            vals = np.array([np.nan if v is None else v for v in val_data], dtype=float)
            pos = (
                self._pos(pos_axis, pos_data)
                if pos_data is not None
                else np.arange(len(vals), dtype=float)
            )
            unit = _unit(pos)
            slot = (1 - gap) * unit / n
            width = np.asarray(t.width, dtype=float) if t.width is not None else slot
            center = pos + ((k - (n - 1) / 2) * slot if mode == "group" else 0.0)
            base = np.zeros_like(vals)
            if mode in ("stack", "relative"):
                for j, (p, v) in enumerate(zip(center, vals)):
                    key = (round(float(p), 9), mode == "relative" and v < 0)
                    base[j] = bottoms.get(key, 0.0)
                    bottoms[key] = base[j] + (0 if math.isnan(v) else v)
            color = _marker_color(t.marker.color, self.trace_colors[i])
            alpha = t.opacity if t.opacity is not None else t.marker.opacity
            style = {"color": color, "alpha": alpha, "zorder": 2}
            if t.marker.line and t.marker.line.width:
                style |= {
                    "edgecolor": _color(t.marker.line.color or "#444"),
                    "linewidth": t.marker.line.width * PX,
                }
            if horizontal:
                ax.barh(center, vals, height=width, left=base, **style)
            else:
                ax.bar(center, vals, width=width, bottom=base, **style)
            err = _errors(t.error_x if horizontal else t.error_y, vals)
            if err is not None:
                spec = t.error_x if horizontal else t.error_y
                ends = vals + base
                kw = {"xerr" if horizontal else "yerr": err}
                ax.errorbar(
                    ends if horizontal else center,
                    center if horizontal else ends,
                    fmt="none",
                    ecolor=_color(spec.color or "#2a3f5f"),
                    elinewidth=(spec.thickness or 2) * PX,
                    capsize=(spec.width if spec.width is not None else 4) * PX,
                    zorder=3,
                    **kw,
                )
            self._legend_entry(
                t,
                Patch(
                    facecolor=self.trace_colors[i] if isinstance(color, list) else color,
                    alpha=alpha,
                ),
            )

    def _scatter(self, ax, i: int, t, xa: str, ya: str) -> None:
        import numpy as np
        from matplotlib.lines import Line2D

        n = len(t.y) if t.y is not None else len(t.x or [])
        xs = self._pos(xa, t.x) if t.x is not None else np.arange(n, dtype=float)
        ys = self._pos(ya, t.y) if t.y is not None else np.arange(n, dtype=float)
        mode = t.mode or ("lines+markers" if n < 20 else "lines")
        color = _color(t.line.color) if t.line.color else self.trace_colors[i]
        alpha = t.opacity
        handle: dict = {"color": color, "linestyle": "none", "marker": None}
        if "lines" in mode:
            dash = _DASH.get(t.line.dash or "solid", "-")
            width = (t.line.width if t.line.width is not None else 2) * PX
            ax.plot(xs, ys, color=color, linestyle=dash, linewidth=width, alpha=alpha, zorder=4)
            handle |= {"linestyle": dash, "linewidth": width}
        if "markers" in mode:
            handle |= self._markers(ax, i, t, xs, ys, color)
        if "text" in mode and t.text is not None:
            texts = [t.text] * n if isinstance(t.text, str) else list(t.text)
            for x, y, s in zip(xs, ys, texts):
                if np.isfinite(x) and np.isfinite(y) and s:
                    ax.annotate(
                        plain(s), (x, y), textcoords="offset points", xytext=(0, 5), ha="center"
                    )
        for spec, key, vals in ((t.error_y, "yerr", ys), (t.error_x, "xerr", xs)):
            err = _errors(spec, vals)
            if err is not None:
                ax.errorbar(
                    xs,
                    ys,
                    fmt="none",
                    ecolor=_color(spec.color) if spec.color else color,
                    elinewidth=(spec.thickness or 2) * PX,
                    capsize=(spec.width if spec.width is not None else 4) * PX,
                    alpha=alpha,
                    zorder=4,
                    **{key: err},
                )
        self._legend_entry(t, Line2D([], [], **handle))

    def _markers(self, ax, i: int, t, xs, ys, line_color) -> dict:
        """Draw a scatter trace's markers; returns the legend handle's marker style."""
        import numpy as np
        from matplotlib.cm import ScalarMappable
        from matplotlib.colors import Normalize, to_rgba

        m = t.marker
        symbol = str(m.symbol or "circle")
        opened = symbol.endswith("-open")
        marker = _SYMBOL.get(symbol.removesuffix("-open").removesuffix("-dot"), "o")
        size = np.asarray(m.size if m.size is not None else 6, dtype=float)
        area = (size * PX * (0.8 if marker == "D" else 1)) ** 2
        fill = m.color
        cax = self._coloraxis(m.coloraxis)
        mappable = None
        if fill is None or isinstance(fill, str):  # one colour (plotly keeps arrays as tuples)
            colors = np.array([to_rgba(line_color if fill is None else _color(fill))] * len(xs))
        elif all(isinstance(v, (int, float)) for v in _flat(fill) if v is not None):
            src = cax if cax is not None else m
            vals = np.array([np.nan if v is None else v for v in fill], dtype=float)
            norm = Normalize(*self._color_range(vals, src.cmin, src.cmax, src.cmid))
            mappable = ScalarMappable(norm, self._colormap(src.colorscale, bool(src.reversescale)))
            colors = mappable.to_rgba(vals)
        else:
            colors = np.array([to_rgba(_color(c)) for c in fill])
        edge_color = m.line.color if m.line and m.line.color is not None else None
        if edge_color is None:
            edges = colors if opened else "none"
        elif isinstance(edge_color, str):
            edges = _color(edge_color)
        else:
            edges = [_color(c) for c in edge_color]
        default_width = 1.5 if opened else 0
        edge_width = m.line.width if m.line and m.line.width is not None else default_width
        widths = np.asarray(edge_width, dtype=float) * PX
        if opened:
            widths = np.maximum(widths, 1.5 * PX)
        ax.scatter(
            xs,
            ys,
            s=area,
            marker=marker,
            facecolors="none" if opened else colors,
            edgecolors=edges,
            linewidths=widths,
            alpha=t.opacity,
            zorder=5,
        )
        shown = cax.showscale is not False if cax is not None else bool(m.showscale)
        if mappable is not None and shown:
            bar = cax.colorbar if cax is not None else m.colorbar
            title = plain(bar.title.text) if bar and bar.title else ""
            self._add_colorbar(m.coloraxis or id(t), mappable, ax, title)
        middle = tuple(colors[len(colors) // 2]) if len(colors) else line_color
        # an outline of one colour of its own (e.g. a legend-only entry) shows in the legend
        edge = edges if isinstance(edge_color, str) else middle
        return {
            "marker": marker,
            "markerfacecolor": "none" if opened else middle,
            "markeredgecolor": edge,
            "markeredgewidth": float(np.max(widths)) if widths.size else 0.0,
            "markersize": min(float(np.max(size)) if size.size else 6.0, 12) * PX,
        }

    def _legend_entry(self, t, handle) -> None:
        default = t.type != "heatmap"
        if t.showlegend is False or (t.showlegend is None and not default):
            return
        name = plain(t.name) or f"trace {len(self.handles)}"
        self.handles.append((handle, name))

    # ------------------------------------------------------------------ layout

    def _target(self, xref: str | None, yref: str | None) -> tuple[Any, Any]:
        """The axes a shape or annotation refers to, or None when it is on the paper."""
        xname = (xref or "x").split(" ")[0]
        yname = (yref or "y").split(" ")[0]
        for (xa, ya), ax in self.axes.items():
            if (xname == "paper" or xname == xa) and (yname == "paper" or yname == ya):
                if xname != "paper" or yname != "paper":
                    return ax, (xa, ya)
        return None, None

    def _transform(self, ax, pair, xref: str | None, yref: str | None):
        from matplotlib.transforms import blended_transform_factory

        def part(ref, letter):
            ref = ref or letter
            if ref == "paper" or ref.endswith(" domain"):
                return ax.transAxes
            return ax.transData

        return blended_transform_factory(part(xref, "x"), part(yref, "y"))

    def _coord(self, value, ref: str | None, axis: str):
        if value is None:
            return 0.0
        if ref and (ref == "paper" or ref.endswith(" domain")):
            return float(value)
        if isinstance(value, str) and axis in self.categories:
            cats = self.categories[axis]
            return float(cats.index(value)) if value in cats else 0.0
        return float(value)

    def _shapes(self) -> None:
        from matplotlib.patches import Rectangle

        for s in self.layout.shapes or ():
            if s.visible is False:
                continue
            ax, pair = self._target(s.xref, s.yref)
            if ax is None:
                continue
            tr = self._transform(ax, pair, s.xref, s.yref)
            x0 = self._coord(s.x0, s.xref, pair[0])
            x1 = self._coord(s.x1, s.xref, pair[0])
            y0 = self._coord(s.y0, s.yref, pair[1])
            y1 = self._coord(s.y1, s.yref, pair[1])
            line = s.line
            color = _color(line.color) if line and line.color else "#444444"
            width = (line.width if line and line.width is not None else 2) * PX
            dash = _DASH.get(line.dash if line and line.dash else "solid", "-")
            z = 1 if s.layer == "below" else 6
            if s.type == "line":
                ax.plot(
                    [x0, x1],
                    [y0, y1],
                    transform=tr,
                    color=color,
                    linewidth=width,
                    linestyle=dash,
                    alpha=s.opacity,
                    zorder=z,
                )
            elif s.type == "rect":
                fill = _color(s.fillcolor) if s.fillcolor else "none"
                ax.add_patch(
                    Rectangle(
                        (x0, y0),
                        x1 - x0,
                        y1 - y0,
                        transform=tr,
                        facecolor=fill,
                        edgecolor=color if width else "none",
                        linewidth=width,
                        alpha=s.opacity,
                        zorder=z,
                    )
                )

    def _annotations(self) -> None:
        for a in self.layout.annotations or ():
            if a.visible is False or not a.text:
                continue
            text = plain(a.text)
            if a.xref in (None, "paper") and a.yref in (None, "paper"):
                ax = self._subplot_title_axes(a)
                if ax is not None:
                    ax.set_title(text, fontsize=10)
                    continue
                x = 0.05 + 0.9 * float(a.x if a.x is not None else 0.5)
                y = 0.06 + 0.86 * float(a.y if a.y is not None else 0.5)
                self.figure.text(
                    x,
                    y,
                    text,
                    ha=_ANCHOR.get(a.xanchor or "center", "center"),
                    va=_VANCHOR.get(a.yanchor or "middle", "center"),
                    fontsize=8,
                )
                continue
            ax, pair = self._target(a.xref, a.yref)
            if ax is None:
                continue
            tr = self._transform(ax, pair, a.xref, a.yref)
            if a.xshift or a.yshift:  # plotly's pixel shifts, as points: a label off its line
                from matplotlib.transforms import offset_copy

                tr = offset_copy(tr, fig=self.figure, x=a.xshift or 0, y=a.yshift or 0,
                                 units="points")  # fmt: skip
            x = self._coord(a.x, a.xref, pair[0])
            y = self._coord(a.y, a.yref, pair[1])
            ax.text(
                x,
                y,
                text,
                transform=tr,
                ha=_ANCHOR.get(a.xanchor or "auto", "center"),
                va=_VANCHOR.get(a.yanchor or "auto", "center"),
                fontsize=8,
                zorder=7,
                bbox={"facecolor": "white", "alpha": 0.7, "edgecolor": "none", "pad": 1},
            )

    def _subplot_title_axes(self, a):
        """The axes whose top edge a paper annotation sits on (a subplot or facet title)."""
        if a.yanchor != "bottom" or a.x is None or a.y is None:
            return None
        for (xa, ya), ax in self.axes.items():
            xd = self._axis(xa).domain if self._axis(xa) else None
            yd = self._axis(ya).domain if self._axis(ya) else None
            xd, yd = xd or (0, 1), yd or (0, 1)
            if xd[0] - 1e-6 <= a.x <= xd[1] + 1e-6 and abs(yd[1] - a.y) < 0.03:
                return ax
        return None

    def _style_axis(self, ax, name: str, letter: str) -> None:
        import numpy as np
        from matplotlib.ticker import MultipleLocator

        axis = self._axis(name)
        mpl_axis = ax.xaxis if letter == "x" else ax.yaxis
        heat = any(
            t.type == "heatmap" and (t[f"{letter}axis"] or letter) == name for t in self.traces
        )
        ax.set_facecolor("white")
        for spine in ax.spines.values():
            spine.set_color("#bbbbbb")
        if not heat:
            ax.grid(True, axis=letter, color="#e5e5e5", linewidth=0.8, zorder=0)
            ax.set_axisbelow(True)
        ax.tick_params(axis=letter, colors="#444444", length=3)
        if axis is None:
            return
        if axis.type == "log":
            (ax.set_xscale if letter == "x" else ax.set_yscale)("log")
        title = plain(axis.title.text) if axis.title else ""
        if title:
            (ax.set_xlabel if letter == "x" else ax.set_ylabel)(title)
        cats = self.categories.get(name)
        labels = None
        if axis.tickvals is not None:
            ticks = (
                self._pos(name, list(axis.tickvals))
                if cats
                else np.asarray(axis.tickvals, dtype=float)
            )
            labels = [plain(s) for s in (axis.ticktext or [str(v) for v in axis.tickvals])]
        elif cats is not None:
            step = max(1, math.ceil(len(cats) / 80))
            ticks = np.arange(0, len(cats), step)
            labels = [plain(cats[int(i)]) for i in ticks]
        if labels is not None:
            mpl_axis.set_ticks(ticks, labels)
        elif axis.dtick is not None and axis.type != "log":
            try:
                mpl_axis.set_major_locator(MultipleLocator(float(axis.dtick)))
            except (TypeError, ValueError):
                pass
        size = axis.tickfont.size if axis.tickfont and axis.tickfont.size else None
        if size:
            ax.tick_params(axis=letter, labelsize=size * PX + 1)
        angle = axis.tickangle
        if letter == "x" and labels is not None and angle in (None, "auto"):
            room = self.width * (axis.domain[1] - axis.domain[0] if axis.domain else 1) * 0.8
            longest = max((len(s) for s in labels), default=0)
            if len(labels) * (longest * 6 + 8) > room:
                angle = -90 if longest * 6 > 60 or len(labels) * 14 > room else -30
        if angle not in (None, "auto") and float(angle):
            rotation = -float(angle)
            for label in mpl_axis.get_ticklabels():
                label.set_rotation(rotation)
                if letter == "x":
                    label.set_ha("right" if 0 < rotation < 90 else "center")
                    label.set_rotation_mode("anchor" if 0 < rotation < 90 else "default")
        if axis.showticklabels is False:
            mpl_axis.set_tick_params(labelbottom=False, labelleft=False)
        set_lim = ax.set_xlim if letter == "x" else ax.set_ylim
        get_lim = ax.get_xlim if letter == "x" else ax.get_ylim
        if axis.range is not None and None not in tuple(axis.range):
            lo, hi = (float(v) for v in axis.range)
            set_lim((10**lo, 10**hi) if axis.type == "log" else (lo, hi))
        elif axis.rangemode in ("tozero", "nonnegative"):
            lo, hi = get_lim()
            set_lim(min(lo, 0) if axis.rangemode == "tozero" else max(lo, 0), max(hi, 0))
        if axis.autorange == "reversed":
            (ax.invert_xaxis if letter == "x" else ax.invert_yaxis)()
        if letter == "y" and axis.scaleanchor:
            ax.set_aspect("equal", adjustable="box")

    def _colorbars(self) -> None:
        every = list(self.axes.values())
        for mappable, axes, title in self.colorbars.values():
            many = len(self.colorbars) == 1 and len(every) > 1
            bar = self.figure.colorbar(
                mappable, ax=every if many else axes, fraction=0.05, pad=0.02
            )
            bar.outline.set_visible(False)
            if title:
                bar.set_label(title)

    def _legend(self) -> None:
        shown = self.layout.showlegend
        if shown is None:
            shown = len(self.handles) >= 2 or any(t.showlegend is True for t in self.traces)
        if not shown or not self.handles:
            return
        legend = self.layout.legend
        horizontal = legend is not None and legend.orientation == "h"
        handles, labels = zip(*self.handles)
        title = plain(legend.title.text) if legend is not None and legend.title else None
        kw = {"frameon": False, "title": title or None}
        if horizontal:
            per_row = max(1, int(self.width // max(90, 7 * max(len(s) for s in labels) + 30)))
            self.figure.legend(
                handles, labels, loc="outside lower center", ncols=min(len(labels), per_row), **kw
            )
        else:
            self.figure.legend(handles, labels, loc="outside right center", **kw)

    def _title(self) -> None:
        title = self.layout.title
        text = plain(title.text) if title and title.text else ""
        if not text:
            return
        size = title.font.size * PX if title.font and title.font.size else 12
        chars = max(30, int(self.width / (0.62 * size / PX)))  # ~0.6 em per character
        lines = [w for line in text.split("\n") for w in (textwrap.wrap(line, chars) or [""])]
        self.figure.suptitle("\n".join(lines), fontsize=size, x=0.02, ha="left")


# ---------------------------------------------------------------------- helpers


def _flat(data) -> list:
    out = []
    for v in data:
        if isinstance(v, (list, tuple)) or (hasattr(v, "tolist") and getattr(v, "ndim", 0)):
            out.extend(_flat(v))
        else:
            out.append(v.item() if hasattr(v, "item") else v)
    return out


def _centers(pos, n: int):
    """``n`` cell centres from a heatmap's x or y (0, 1, ... when they are unusable)."""
    import numpy as np

    pos = np.asarray(pos, dtype=float)[:n]
    return pos if pos.size == n and np.isfinite(pos).all() else np.arange(n, dtype=float)


def _edges(centers):
    """Cell edges around ``centers`` (midpoints; the ends one half step out)."""
    import numpy as np

    c = np.asarray(centers, dtype=float)
    if c.size == 1:
        return np.array([c[0] - 0.5, c[0] + 0.5])
    mid = (c[1:] + c[:-1]) / 2
    return np.concatenate([[c[0] - (mid[0] - c[0])], mid, [c[-1] + (c[-1] - mid[-1])]])


def _unit(pos) -> float:
    """The spacing of bar positions (1 for categories)."""
    import numpy as np

    p = np.unique(np.asarray(pos, dtype=float)[np.isfinite(pos)])
    return float(np.min(np.diff(p))) if p.size > 1 else 1.0


def _errors(spec, values):
    """``[below, above]`` error bar lengths of an ``error_x``/``error_y``, or None."""
    import numpy as np

    if spec is None or spec.visible is False or spec.type is None and spec.array is None:
        return None
    n = len(values)
    vals = np.asarray(values, dtype=float)
    kind = spec.type or "data"

    def amount(array, value):
        if kind == "data":
            if array is None:
                return None
            return np.array([np.nan if v is None else v for v in array], dtype=float)[:n]
        if kind == "percent":
            return np.abs(vals) * (value if value is not None else 10) / 100
        if kind == "constant":
            return np.full(n, float(value if value is not None else 10))
        if kind == "sqrt":
            return np.sqrt(np.abs(vals))
        return None

    above = amount(spec.array, spec.value)
    if above is None:
        return None
    below = (
        above
        if spec.symmetric is not False and spec.arrayminus is None
        else amount(spec.arrayminus, spec.valueminus)
    )
    if below is None:
        below = above
    return np.nan_to_num(np.vstack([below, above]))


def _color(value: Any) -> Any:
    """A plotly colour (``#hex``, ``rgb()``, ``rgba()``, ``hsl()``, a CSS name) for matplotlib."""
    if value is None or not isinstance(value, str):
        return value
    text = value.strip().lower()
    m = re.fullmatch(r"(rgba?|hsla?)\(([^)]*)\)", text)
    if not m:
        return text
    parts = [p.strip() for p in m.group(2).split(",")]
    alpha = float(parts[3]) if len(parts) > 3 else 1.0
    if m.group(1).startswith("rgb"):
        r, g, b = (float(p.rstrip("%")) / (100 if p.endswith("%") else 255) for p in parts[:3])
    else:
        import colorsys

        h = float(parts[0]) / 360 % 1
        s, light = (float(p.rstrip("%")) / 100 for p in parts[1:3])
        r, g, b = colorsys.hls_to_rgb(h, light, s)
    return (r, g, b, alpha)


def _marker_color(color, default):
    if color is None:
        return default
    if isinstance(color, str):
        return _color(color)
    return [_color(c) if isinstance(c, str) else default for c in color]
