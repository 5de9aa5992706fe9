"""A calibration report in the terminal (``ragsight calibrate``): how the labels paired, the
means corrected by the labels, agreement and correlation with the labels, scores by label group
and the concordance table, then the notes."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from .._stats import ConditionalRate
from ._calibrate import CalibrationReport
from ._format import compact_table, fmt, fmt_ci, fmt_p

__all__ = ["print_calibration"]


def _print_corrected(report: CalibrationReport, c: Console) -> None:
    """The means corrected by the labels (PPI), with how many labels each rests on."""
    shown = [m for m in report.metrics if m.corrected_mean is not None]
    if not shown:
        return
    tb = compact_table("Means corrected by the labels (PPI)")
    for col in ("metric", "judge", "corrected", "95% CI", "labels", "λ"):
        tb.add_column(col, justify="left" if col == "metric" else "right",
                      **({"overflow": "fold"} if col == "metric" else {"no_wrap": True}))
    for m in shown:
        low, high = m.corrected_ci if m.corrected_ci else (None, None)
        tb.add_row(Text(m.metric + (" !" if m.too_few_labels else "")), fmt(m.mean), fmt(m.corrected_mean),
                   fmt_ci(low, high), f"{m.n_labels}/{m.n_judged}", fmt(m.corrected_lambda, 2))
    c.print(tb)
    c.print("judge: the raw mean over every scored sample; corrected: that mean with the judge's "
            "error on the labelled samples taken out (prediction-powered inference), with its 95% "
            "CI; labels: labelled of scored samples; λ: the weight given to the judge (1 plain "
            "PPI, 0 the labels alone).")
    few = [m for m in shown if m.too_few_labels]
    if few:
        c.print(Text(
            f"WARNING: too few labels: {'; '.join(m.too_few_text() for m in few)}. Those corrected means "
            "and CIs (marked !) are rough; label more samples before relying on them.", style="bold red"))


def rate_text(rate: ConditionalRate) -> str:
    """A conditional probability with its counts, e.g. ``"0.87 (13/15)"``."""
    return f"{fmt(rate.probability, 2)} ({rate.k}/{rate.n})"


def print_calibration(report: CalibrationReport, console: Console | None = None) -> None:
    """Print a calibration report with rich."""
    c = console or Console(highlight=False)
    f = report.label_field
    c.print(
        Text(
            f"Run {report.run_id} against labels '{f}' ({report.label_kind}"
            + (
                f", binarised at >= {report.binarised_at:g}"
                if report.binarised_at is not None
                else ""
            )
            + ")"
        )
    )
    if report.label_kind == "graded" and report.binarised_at is None:
        span = report.label_range
        kinds = (f"graded labels from {span[0]:g} to {span[1]:g}, not binarised: "
                 "--label-threshold X makes label >= X count as 1" if span is not None
                 else "graded labels, not binarised")
    else:
        kinds = f"{report.n_positive} with {f}=1, {report.n_negative} with {f}=0"
    how = "from the store matched to" if report.labels_source == "store" else "paired with"
    by = "content" if report.labels_source == "store" else "id"
    c.print(
        f"{report.matched} of {report.n_labels} labels {how} a sample of the run by {by} "
        f"({kinds}); {report.unlabelled} sample(s) of the run have no label."
    )
    if report.unmatched_ids:
        shown = ", ".join(report.unmatched_ids[:10])
        more = (
            f" and {len(report.unmatched_ids) - 10} more" if len(report.unmatched_ids) > 10 else ""
        )
        c.print(
            Text(
                f"WARNING: {len(report.unmatched_ids)} label id(s) match no sample of the run "
                f"({report.paired_share:.0%} paired): {shown}{more}. The figures below speak "
                "for the paired labels only.",
                style="bold red",
            )
        )
    for sid, why in report.invalid[:10]:
        c.print(Text(f"unreadable label for '{sid}': {why}", style="yellow"))

    _print_corrected(report, c)

    t = report.threshold
    if any(m.auroc is not None or m.at_threshold is not None for m in report.metrics):
        agree = compact_table("Agreement with the labels")
        for col in (
            "metric",
            "n",
            "AUROC",
            f"acc@{t:g}",
            f"κ@{t:g}",
            "best t",
            "acc@best",
            "κ@best",
            "ECE",
        ):
            agree.add_column(col, justify="left" if col == "metric" else "right",
                             **({"overflow": "fold"} if col == "metric" else {"no_wrap": True}))
        for m in report.metrics:
            a, b = m.at_threshold, m.at_best
            agree.add_row(
                Text(m.metric + (" (1-x)" if m.oriented else "")),
                str(m.n),
                fmt(m.auroc),
                fmt(a.accuracy if a else None),
                fmt(a.kappa if a else None),
                fmt(m.best_threshold),
                fmt(b.accuracy if b else None),
                fmt(b.kappa if b else None),
                fmt(m.ece),
            )
        c.print(agree)
        c.print(
            "acc, κ (Cohen's kappa): the prediction score >= t against the label; best t "
            "maximises Youden's J. ECE: scores read as P(label=1), 10 equal-width bins."
        )

    corr = compact_table("Correlation with the labels (p-value)")
    for col in ("metric", "n", "Spearman", "Kendall", "Pearson"):
        corr.add_column(col, justify="left" if col == "metric" else "right",
                             **({"overflow": "fold"} if col == "metric" else {"no_wrap": True}))
    for m in report.metrics:
        cr = m.correlations
        corr.add_row(
            Text(m.metric + (" (1-x)" if m.oriented else "")),
            str(cr.n),
            *(
                f"{fmt(v)} ({fmt_p(pv)})" if v is not None else "–"
                for v, pv in (
                    (cr.spearman, cr.spearman_p),
                    (cr.kendall, cr.kendall_p),
                    (cr.pearson, cr.pearson_p),
                )
            ),
        )
    c.print(corr)

    if any(m.groups is not None for m in report.metrics):
        grp = compact_table("Scores by label group: mean (s.d.)")
        for col in ("metric", f"{f}=1", "n", f"{f}=0", "n", "t", "df", "p"):
            grp.add_column(col, justify="left" if col == "metric" else "right",
                             **({"overflow": "fold"} if col == "metric" else {"no_wrap": True}))
        for m in report.metrics:
            g = m.groups
            if g is None:
                continue
            grp.add_row(
                Text(m.metric + (" (1-x)" if m.oriented else "")),
                g.a.mean_sd(),
                str(g.a.n),
                g.b.mean_sd(),
                str(g.b.n),
                fmt(g.t_statistic, 2),
                fmt(g.df, 1),
                fmt_p(g.p_value),
            )
        c.print(grp)
        c.print(f"t, df, p: one-sided Welch t-test of mean({f}=1) > mean({f}=0).")

    cc = report.concordance
    if cc is not None:
        tb = cc.table
        con = compact_table(f"Concordance with the labels ({cc.n} samples with both metrics)")
        for col in ("", cc.m1, cc.m2, "joint"):
            con.add_column(col, justify="left" if col == "" else "right",
                           **({"overflow": "fold"} if col == "" else {"no_wrap": True}))
        hi, lo = tb.correct_given_high, tb.wrong_given_low
        con.add_row(
            f"P({f}=1 | m1 > {tb.t_high[0]:g}, m2 > {tb.t_high[1]:g})",
            rate_text(hi.m1),
            rate_text(hi.m2),
            rate_text(hi.joint),
        )
        con.add_row(
            f"P({f}=0 | m1 < {tb.t_low[0]:g}, m2 < {tb.t_low[1]:g})",
            rate_text(lo.m1),
            rate_text(lo.m2),
            rate_text(lo.joint),
        )
        c.print(con)
        c.print(
            "Each metric column conditions on that metric alone; joint on both. "
            "Cells: probability (k/n samples)."
        )
    for note in report.notes:
        c.print(Text(f"note: {note}", style="dim"))
