"""A sample that passes faithfulness's threshold with a claim judged unsupported (one invented
claim among good ones: the share of supported claims is 0.67 or 0.75) is said loudly: in the
run's summary, the HTML report and ``diagnose``, with the threshold that fails it; and not said
when that threshold is asked for, or when every claim is supported."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

import ragsight
from ragsight import EvaluationResult, Store
from ragsight.cli import main
from ragsight.cli._summary import print_summary
from ragsight.diagnosis import diagnose, diagnosis_lines
from ragsight.report import write_report
from ragsight.result import passing_with_unsupported, unsupported_note
from tests.diagnose_world import BIKES, BOOKS, FEES, OPENED, SUNDAYS, provider, row

INVENTED = "It also hosts chess nights every Friday."
ROWS = [
    # three claims the chunks state and one they do not: 3 of 4 supported, passes 0.5
    row("one-invented", "What does the Larkspur library offer?", [BIKES, BOOKS, SUNDAYS],
        f"{BIKES} {BOOKS} {SUNDAYS} {INVENTED}"),
    # every claim supported
    row("all-good", "When did it open, and what are the fees?", [OPENED, FEES], f"{OPENED} {FEES}"),
    # one of two supported: 0.5, passes too
    row("half", "What does the library lend?", [BIKES], f"{BIKES} {INVENTED}"),
    # nothing supported: fails, a cause of diagnose, not this note
    row("none", "What does the library host?", [BIKES], INVENTED),
]


def evaluate(store: str = ":memory:") -> EvaluationResult:
    return ragsight.evaluate(ROWS, ["faithfulness"], judge=provider(), store=store,
                             options=ragsight.RunOptions(show_progress=False))


def test_the_samples_that_pass_with_an_unsupported_claim_are_found() -> None:
    result = evaluate()
    assert result.scores["one-invented"]["faithfulness"].value == 0.75
    assert passing_with_unsupported(result) == {"faithfulness": ["one-invented", "half"]}
    # asked to fail on any unsupported claim, none passes with one
    assert passing_with_unsupported(result, {"faithfulness": 1.0}) == {}
    note = unsupported_note(result)
    assert note is not None
    assert "faithfulness: 2 samples pass 0.5 with a claim judged unsupported (e.g. one-invented)" in note[0]
    assert note[1] == f"ragsight diagnose {result.run_id} --threshold faithfulness=1"


def test_no_note_when_every_passing_sample_has_every_claim_supported() -> None:
    result = ragsight.evaluate([ROWS[1], ROWS[3]], ["faithfulness"], judge=provider(),
                               options=ragsight.RunOptions(show_progress=False))
    assert passing_with_unsupported(result) == {}
    assert unsupported_note(result) is None


def test_the_summary_and_the_report_say_it(tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    result = evaluate(store)
    buf = io.StringIO()
    print_summary(result, Console(file=buf, width=100, force_terminal=False))
    text = " ".join(buf.getvalue().split())
    assert "2 samples pass 0.5 with a claim judged unsupported" in text
    assert f"\n  ragsight diagnose {result.run_id} --threshold faithfulness=1\n" in buf.getvalue()
    page = tmp_path / "r.html"
    with Store(store) as st:
        write_report(st, [result.run_id], page)
    assert "2 samples pass 0.5 with a claim judged unsupported" in page.read_text(encoding="utf-8")


def test_diagnose_names_them_beside_the_causes_and_not_at_threshold_one() -> None:
    result = evaluate()
    d = diagnose(result, topics=False)
    assert [s.sample_id for s in d.samples] == ["none"]
    assert d.passing_unsupported == {"faithfulness": ("one-invented", "half")}
    text = "\n".join(diagnosis_lines(d))
    assert "Passing with a claim judged unsupported (faithfulness, 2 samples): e.g. one-invented, half" in text
    assert f"ragsight diagnose {result.run_id} --threshold faithfulness=1" in text
    assert d.to_dict()["passing_with_unsupported_claims"] == {"faithfulness": ["one-invented", "half"]}
    strict = diagnose(result, thresholds={"faithfulness": 1.0}, topics=False)
    assert sorted(s.sample_id for s in strict.samples) == ["half", "none", "one-invented"]
    assert strict.passing_unsupported == {}
    assert "Passing with a claim" not in "\n".join(diagnosis_lines(strict))


def test_the_diagnose_command_prints_it_and_its_json_lists_them(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    store = str(tmp_path / "s.db")
    result = evaluate(store)
    assert main(["diagnose", result.run_id, "--store", store]) == 0
    assert "Passing with a claim judged unsupported" in capsys.readouterr().out
    assert main(["diagnose", result.run_id, "--store", store, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["passing_with_unsupported_claims"] == {"faithfulness": ["one-invented", "half"]}
