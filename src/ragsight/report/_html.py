"""The HTML report: one self-contained file that opens offline and reads with JavaScript off.

No CDN, no web fonts, no images: the plots are inline SVG drawn here, the sample panels are
``<details>`` elements. Every text that comes from the data (questions, contexts, responses,
judge reasons, run metadata) goes through ``html.escape``; a Content-Security-Policy allows only
this file's own style sheet and script (by hash), so even markup that slipped through could not
load or run anything. The one script records JavaScript errors and policy violations in
``<body data-js-errors>`` and how far the page is wider than the window in
``data-overflow-px`` (the browser test reads them); the page works without it.

The supporting context span of a claim is found by a deterministic lookup, not by the judge:
the context sentence (``split_sentences``) that contains the largest share of the claim's
words (lower-cased, common stop words left out), ties to the earliest; shown when it holds at
least half of them.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._version import __version__
from ..dataset import atomic_write
from ..result import EvaluationResult
from ..store import Store
from ._compare import Comparison, compare
from ._evidence import SentenceMatch, best_matching_sentence
from ._html_comparison import comparison_section
from ._html_run import run_section
from ._markup import e
from ._run_data import RunData, load_runs

__all__ = ["SentenceMatch", "best_matching_sentence", "render_report", "write_report"]


CSS = """
.warn{color:var(--bad);background:var(--bad-bg);padding:.4em .6em;border-radius:4px}
:root{--ok:#1a7f37;--ok-bg:#e6f4ea;--bad:#b42318;--bad-bg:#fdecea;--muted:#5f6368;--line:#d0d7de;
--mark:#fff1a8;--accent:#0b57d0;--best:#e6f4ea}
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0 auto;
max-width:1180px;padding:1rem 1.5rem 4rem;color:#1f2328;line-height:1.45;background:#fff}
h1{font-size:1.6rem;margin:.4rem 0}h2{font-size:1.3rem;border-bottom:2px solid var(--line);
padding-bottom:.2rem;margin-top:2.2rem}h3{font-size:1.08rem;margin:1.4rem 0 .5rem}
h4{font-size:1rem;margin:.9rem 0 .3rem}
nav ul{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.4rem 1.2rem}
a{color:var(--accent)}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.92rem}
th,td{border:1px solid var(--line);padding:.25rem .55rem;text-align:right;vertical-align:top}
th{background:#f6f8fa}th:first-child,td:first-child{text-align:left}
td.text,th.text{text-align:left}
th,td{white-space:nowrap}td.text{white-space:normal;min-width:10em;overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%;margin:.5rem 0 1rem}.scroll>table{margin:0}
svg{max-width:100%;height:auto}
@media (max-width:700px){body{padding:.5rem .6rem 3rem}th,td{padding:.2rem .35rem}}
td.best{background:var(--best);font-weight:700}
tr.differs th{color:var(--bad)}
.muted,.note{color:var(--muted);font-size:.9rem}
.plots{display:flex;flex-wrap:wrap;gap:1rem}
figure{margin:0;border:1px solid var(--line);border-radius:6px;padding:.4rem .6rem;background:#fff}
figcaption{font-size:.85rem;color:var(--muted);max-width:340px}
svg .bar{fill:#7aa7e8}svg .axis{stroke:#57606a;stroke-width:1}svg .grid{stroke:#eaeef2}
svg .mean{stroke:#b42318;stroke-width:2}svg .ci{fill:#b42318;fill-opacity:.14}
svg .whisker{stroke:#1f2328;stroke-width:1.5}svg text{font-size:11px;fill:#1f2328;
font-family:system-ui,sans-serif}svg .bestbar{fill:#2da44e}
details.sample,details.conversation{border:1px solid var(--line);border-radius:6px;margin:.5rem 0;background:#fff}
details.sample>summary,details.conversation>summary{cursor:pointer;padding:.45rem .7rem;background:#f6f8fa;border-radius:6px}
details.sample[open]>summary,details.conversation[open]>summary{border-bottom:1px solid var(--line);border-radius:6px 6px 0 0}
ol.turns{list-style:none;padding:0}ol.turns li{margin:.3rem 0;overflow-wrap:anywhere}
li.msg.turn{border-left:3px solid var(--line);padding-left:.5rem}li.msg.tool{color:#555;font-size:.9rem}
.panel{padding:.3rem 1rem .8rem}
.field{margin:.5rem 0}.field>b{display:block;font-size:.85rem;color:var(--muted);
text-transform:uppercase;letter-spacing:.03em}
.text{white-space:pre-wrap;overflow-wrap:anywhere}
ol.contexts{padding-left:0;list-style:none}ol.contexts>li{margin:.35rem 0;padding:.3rem .5rem;
border-left:4px solid var(--line)}ol.contexts>li.relevant{border-left-color:var(--ok);
background:#f3faf5}ol.contexts>li.irrelevant{border-left-color:#d0d7de}
.tag{display:inline-block;font-size:.78rem;border-radius:3px;padding:0 .35rem;margin-left:.3rem;
border:1px solid var(--line)}
.tag.relevant{color:var(--ok);border-color:var(--ok)}.tag.irrelevant{color:var(--muted)}
mark{background:var(--mark);padding:0 .1rem}
.badge{display:inline-block;font-size:.8rem;border-radius:3px;padding:0 .35rem;margin:0 .2rem;
background:#eef1f4}
.badge.low{background:var(--bad-bg);color:var(--bad)}.badge.failed{background:var(--bad);color:#fff}
ul.claims{list-style:none;padding-left:0}
li.claim{margin:.35rem 0;padding:.3rem .55rem;border-radius:4px;border-left:4px solid}
li.claim.ok{background:var(--ok-bg);border-color:var(--ok)}
li.claim.bad{background:var(--bad-bg);border-color:var(--bad)}
.verdict{font-weight:700}li.claim.ok .verdict{color:var(--ok)}li.claim.bad .verdict{color:var(--bad)}
.why,.support{font-size:.88rem;margin-top:.15rem}.support q{background:var(--mark)}
.outcome{font-size:.85rem;color:var(--muted)}
pre{white-space:pre-wrap;font-size:.8rem;background:#f6f8fa;padding:.4rem;border-radius:4px}
@media print{details.sample>summary{background:none}nav{display:none}}
"""

SCRIPT = """(function(){var errs=[];function put(){if(document.body){
document.body.setAttribute("data-js-errors",errs.join(" | "));}}
window.addEventListener("error",function(e){var t=e.target;
errs.push("error: "+(e.message||(t&&(t.src||t.href))||e.type));put();},true);
document.addEventListener("securitypolicyviolation",function(e){
errs.push("csp: "+e.violatedDirective+" "+e.blockedURI);put();});
document.addEventListener("DOMContentLoaded",function(){
var d=document.documentElement;document.body.setAttribute("data-js","ran");
document.body.setAttribute("data-overflow-px",String(Math.max(0,d.scrollWidth-d.clientWidth)));
put();});})();"""


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


CSP = (
    f"default-src 'none'; style-src '{_sha256(CSS)}'; script-src '{_sha256(SCRIPT)}'; "
    "base-uri 'none'; form-action 'none'"
)


def render_report(
    runs: Sequence[RunData | EvaluationResult],
    *,
    comparison: Comparison | None = None,
    title: str | None = None,
    generated_at: str | None = None,
    allow_poor_pairing: bool = False,
    compare_runs: bool = True,
) -> str:
    """The HTML report of one or more runs, as one self-contained document.

    With several runs the comparison section (against the first run) comes first; it is
    computed with :func:`compare` unless given, or left out with ``compare_runs=False`` (runs
    of different data, such as the tests of a pytest session). ``generated_at`` replaces the
    current time in the footer (for reproducible output).
    """
    data = [r if isinstance(r, RunData) else RunData.from_result(r) for r in runs]
    if not data:
        raise ValueError("render_report needs at least one run")
    several = len(data) > 1
    if several and comparison is None and compare_runs:
        comparison = compare(data, allow_poor_pairing=allow_poor_pairing)
    heading = title or (
        "ragsight report: " + (data[0].run_id if not several else f"{len(data)} runs")
    )
    when = generated_at or dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    nav = []
    if comparison is not None:
        nav.append('<li><a href="#comparison">comparison</a></li>')
    for i, d in enumerate(data, start=1):
        nav.append(f'<li><a href="#r{i}">run {e(d.run_id)}</a></li>')
    body = [
        f'<h1 id="top">{e(heading)}</h1>',
        f'<p class="muted">ragsight {e(__version__)} — generated {e(when)}. '
        "Self-contained: works offline and without JavaScript.</p>",
        "<nav><ul>" + "".join(nav) + "</ul></nav>",
    ]
    if comparison is not None:
        body.append(comparison_section(comparison))
    for i, d in enumerate(data, start=1):
        body.append(run_section(d, i, several))
    # Every table scrolls inside its own box on a narrow screen: the page never gets wider than
    # the window (data text is escaped, so "<table" here is always the report's own markup).
    body = [part.replace("<table>", '<div class="scroll"><table>').replace("</table>", "</table></div>")
            for part in body]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{e(heading)}</title><style>{CSS}</style><script>{SCRIPT}</script></head>"
        '<body data-js-errors="">' + "\n".join(body) + "</body></html>\n"
    )


def write_report(
    store: Store, refs: Sequence[str], out: str | os.PathLike[str], **kwargs: Any
) -> Path:
    """Render the report of the runs ``refs`` (ids, id prefixes or 'last') into ``out``."""
    return save_html(render_report(load_runs(store, refs), **kwargs), out)


def save_html(text: str, out: str | os.PathLike[str]) -> Path:
    """Write a rendered report atomically (a reader never sees half a file)."""
    path = Path(out)
    with atomic_write(path) as f:  # on an error: no temporary file left, the previous file intact
        f.write(text)
    return path
