"""ragsight.diagnose on the real embedded judge's evidence: five planted samples (a retrieval miss,
a contradicted claim, a decline the chunks could answer, a response with no claim, a correct
answer) get the cause they were written for.

Slow: loads the 1.1 GB model once per session and runs a few dozen model calls.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import ragsight
from ragsight.diagnosis import diagnose
from ragsight.judge import Judge
from tests.diagnose_world import BIKES, BOOKS, OPENED, row

pytestmark = [pytest.mark.slow, pytest.mark.local]

ROWS = [
    row("miss", "Who designed the Larkspur library?", [BIKES, BOOKS], "Ada Moss designed the Larkspur library.",
        "Ada Moss designed the Larkspur library."),
    row("contra", "When did the Larkspur library open?", [OPENED, BIKES], "The Larkspur library opened in 1990.",
        OPENED),
    row("declined", "When did the Larkspur library open?", [OPENED, BIKES], "I don't know; the documents do not say.",
        OPENED),
    row("no-claim", "What does the Larkspur library lend?", [BIKES], "Happy to help!"),
    row("fine", "When did the Larkspur library open?", [OPENED, BIKES], OPENED, OPENED),
]


def test_planted_causes_with_the_embedded_judge(qwen_provider: object, tmp_path: Path) -> None:
    result = ragsight.evaluate(ROWS, ["faithfulness", "context_recall", "factual_correctness"],
                               judge=Judge(qwen_provider), store=str(tmp_path / "r.db"),  # type: ignore[arg-type]
                               options=ragsight.RunOptions(show_progress=False))
    d = diagnose(result, embedder="words")
    assert {s.sample_id: s.primary for s in d.samples} == {
        "miss": "retrieval", "contra": "unsupported", "declined": "decline", "no-claim": "judge"}
    miss = d.sample("miss")
    assert miss is not None and miss.findings[0].evidence[0].kind == "missed"
    contra = d.sample("contra")
    assert contra is not None
    [claim] = contra.findings[0].evidence
    assert (claim.kind, claim.chunk, claim.quote) == ("contradicted", 1, OPENED)
    declined = d.sample("declined")
    assert declined is not None and declined.findings[0].evidence[0].kind == "wrong_decline"
