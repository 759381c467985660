"""Test tooling, not library API: open an HTML figure in headless Chromium and report what
it drew and any console errors (the exported lineage figure's test uses it)."""

from __future__ import annotations

import json
from pathlib import Path

_PROBE_HEAD = (
    "<script>window.__errors=[];window.addEventListener('error',function(e){"
    "window.__errors.push(String(e.message||e));});(function(){var o=console.error;"
    "console.error=function(){window.__errors.push(Array.prototype.join.call(arguments,' '));"
    "o.apply(console,arguments);};})();</script>"
)
_PROBE_TAIL = (
    "<script>window.addEventListener('load',function(){setTimeout(function(){"
    "var p=document.createElement('pre');p.id='__probe';p.textContent=JSON.stringify({"
    "errors:window.__errors,plots:document.querySelectorAll('.js-plotly-plot').length,"
    "points:document.querySelectorAll('.point').length});document.body.appendChild(p);"
    "},500);});</script>"
)


def find_chromium() -> str | None:
    import shutil

    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def browser_check(path: str | Path, chromium: str | None = None, timeout: float = 120) -> dict:
    """Open an HTML file in headless Chromium and report console errors and what was drawn.

    A copy of the page gets a first script that records uncaught errors and
    ``console.error`` calls and a last one that, 0.5 s after ``load``, writes them with the
    number of plotly plots and drawn markers into the DOM, which ``--dump-dom`` prints.
    Returns ``{"errors": [...], "plots": n, "points": n}``. Chromium: ``apt-get install -y
    chromium`` (Debian).
    """
    import re
    import subprocess
    import tempfile

    exe = chromium or find_chromium()
    if exe is None:
        raise RuntimeError("no Chromium found (apt-get install -y chromium)")
    html = Path(path).read_text(encoding="utf-8")
    html = html.replace("<head>", "<head>" + _PROBE_HEAD, 1)
    html = html.replace("</body>", _PROBE_TAIL + "</body>", 1)
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "probe.html"
        page.write_text(html, encoding="utf-8")
        proc = subprocess.run(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                f"--user-data-dir={tmp}/profile",
                "--virtual-time-budget=10000",
                "--dump-dom",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    found = re.search(r'<pre id="__probe">(.*?)</pre>', proc.stdout, re.S)
    if not found:
        tail = " ".join(proc.stderr.split()[-30:])
        raise RuntimeError(f"Chromium printed no probe report (exit {proc.returncode}): {tail}")
    import html as html_lib

    return json.loads(html_lib.unescape(found.group(1)))
