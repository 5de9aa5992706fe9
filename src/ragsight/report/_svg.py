"""The report's plots, as inline SVG (no images, no scripts): a metric's histogram with its mean
and confidence interval, and a metric's mean per run with its interval."""

from __future__ import annotations

from collections.abc import Sequence

from ..result import MetricSummary
from ._compare import Comparison
from ._format import bar_scale, fmt_ci
from ._markup import e

__all__ = ["count_ticks", "histogram_svg", "runs_svg"]


def count_ticks(peak: int) -> list[int]:
    """The y-axis ticks of a histogram whose tallest bar holds ``peak`` samples: whole counts
    only (a count of 1.5 samples means nothing), the peak and one whole number near its half."""
    if peak <= 1:
        return [1]
    half = peak // 2
    return [half, peak] if half >= 1 and half != peak else [peak]



def _nice(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".") if v != 0 else "0"


def histogram_svg(values: Sequence[float], summary: MetricSummary, bins: int = 10) -> str:
    """A histogram of one metric's scored values with its mean and CI, as inline SVG."""
    w, h, left, right, top, bottom = 340, 140, 30, 12, 12, 22
    lo, hi = bar_scale(values)
    counts = [0] * bins
    for v in values:
        i = min(bins - 1, max(0, int((v - lo) / (hi - lo) * bins))) if hi > lo else 0
        counts[i] += 1
    peak = max(counts) if counts and max(counts) > 0 else 1
    pw, ph = w - left - right, h - top - bottom

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * pw if hi > lo else left

    label = f"{summary.metric}: histogram of {len(values)} scored values" + (
        f", mean {summary.mean:.3f}" if summary.mean is not None else ""
    )
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" role="img" aria-label="{e(label)}"><title>{e(label)}</title>'
    ]
    for tick in count_ticks(peak):
        y = top + ph * (1 - tick / peak)
        parts.append(f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{w - right}" y2="{y:.1f}"/>')
        parts.append(f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{tick}</text>')
    if summary.ci_low is not None and summary.ci_high is not None:
        x0, x1 = x(summary.ci_low), x(summary.ci_high)
        parts.append(
            f'<rect class="ci" x="{x0:.1f}" y="{top}" width="{max(1.0, x1 - x0):.1f}" '
            f'height="{ph}"><title>95% CI {e(fmt_ci(summary.ci_low, summary.ci_high))}'
            f"</title></rect>"
        )
    bw = pw / bins
    for i, c in enumerate(counts):
        if c == 0:
            continue
        bh = ph * c / peak
        b_lo = lo + (hi - lo) * i / bins
        b_hi = lo + (hi - lo) * (i + 1) / bins
        parts.append(
            f'<rect class="bar" x="{left + i * bw + 1:.1f}" y="{top + ph - bh:.1f}" '
            f'width="{bw - 2:.1f}" height="{bh:.1f}"><title>{c} sample{"s" if c != 1 else ""} in '
            f"[{b_lo:.2f}, {b_hi:.2f}{']' if i == bins - 1 else ')'}</title></rect>"
        )
    if summary.mean is not None:
        xm = x(summary.mean)
        parts.append(
            f'<line class="mean" x1="{xm:.1f}" y1="{top - 4}" x2="{xm:.1f}" '
            f'y2="{top + ph}"><title>mean {summary.mean:.3f}</title></line>'
        )
    parts.append(
        f'<line class="axis" x1="{left}" y1="{top + ph}" x2="{w - right}" y2="{top + ph}"/>'
    )
    for v in (lo, (lo + hi) / 2, hi):
        parts.append(
            f'<text x="{x(v):.1f}" y="{top + ph + 14}" text-anchor="middle">{_nice(v)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def runs_svg(cmp: Comparison, row_index: int) -> str:
    """One metric across runs: a bar per run with its 95% CI, the best run's bar in green."""
    row = cmp.table[row_index]
    n = len(cmp.runs)
    w, left, right, rh, top = 360, 28, 56, 22, 6
    h = top + n * rh + 20
    lo, hi = bar_scale([*row.means, *(c for pair in row.ci for c in pair)])
    pw = w - left - right

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * pw if hi > lo else left

    label = f"{row.metric} ({'lower' if row.lower_is_better else 'higher'} is better) by run"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" role="img" aria-label="{e(label)}"><title>{e(label)}</title>'
    ]
    for i, run in enumerate(cmp.runs):
        y = top + i * rh
        parts.append(f'<text x="{left - 6}" y="{y + 14}" text-anchor="end">{e(run.label)}</text>')
        mean = row.means[i]
        if mean is None:
            parts.append(f'<text x="{left + 4}" y="{y + 14}">no scored values</text>')
            continue
        cls = "bestbar" if i in row.best else "bar"
        parts.append(
            f'<rect class="{cls}" x="{x(min(lo, 0.0)):.1f}" y="{y + 3}" '
            f'width="{max(1.0, x(mean) - x(min(lo, 0.0))):.1f}" height="{rh - 8}">'
            f"<title>{e(run.label)}: {mean:.3f}</title></rect>"
        )
        c_lo, c_hi = row.ci[i]
        if c_lo is not None and c_hi is not None:
            ym = y + 3 + (rh - 8) / 2
            parts.append(
                f'<line class="whisker" x1="{x(c_lo):.1f}" y1="{ym:.1f}" x2="{x(c_hi):.1f}" '
                f'y2="{ym:.1f}"/><line class="whisker" x1="{x(c_lo):.1f}" y1="{ym - 4:.1f}" '
                f'x2="{x(c_lo):.1f}" y2="{ym + 4:.1f}"/><line class="whisker" '
                f'x1="{x(c_hi):.1f}" y1="{ym - 4:.1f}" x2="{x(c_hi):.1f}" y2="{ym + 4:.1f}"/>'
            )
        parts.append(
            f'<text x="{w - right + 4}" y="{y + 14}">{mean:.3f}{" ★" if i in row.best else ""}'
            f"</text>"
        )
    ya = top + n * rh
    parts.append(f'<line class="axis" x1="{left}" y1="{ya}" x2="{left + pw}" y2="{ya}"/>')
    for v in (lo, (lo + hi) / 2, hi):
        parts.append(f'<text x="{x(v):.1f}" y="{ya + 14}" text-anchor="middle">{_nice(v)}</text>')
    parts.append("</svg>")
    return "".join(parts)
