"""The real embedded judge reads a chunk through the reference's claims (context_precision): a
chunk on the same topic that does not state what the reference says is not relevant.

Slow: the embedded model, a few dozen short yes/no calls and one claim extraction.
"""

from __future__ import annotations

import pytest

import ragsight
from ragsight.judge import Judge

pytestmark = [pytest.mark.slow, pytest.mark.local]

WEEKDAYS = ("Timetable, Kirkwall to Shapinsay. Monday to Saturday: departures at 07:15, 09:40, 12:00, "
            "15:30 and 17:45. The crossing takes 25 minutes.")
SUNDAYS = ("Sundays and public holidays: one departure from Kirkwall, at 10:30, returning from "
           "Shapinsay at 11:15.")
FARES = ("Fares. Adult single 4.90 pounds, child single 2.45 pounds. Cars must be booked at least a "
         "day ahead.")


def test_a_timetable_for_other_days_is_not_relevant_to_the_sunday_crossing(qwen_provider: object) -> None:
    row = {"id": "sunday", "question": "When can I take the ferry to Shapinsay on a Sunday?",
           "reference": "On Sundays there is one crossing from Kirkwall, at 10:30.",
           "contexts": [WEEKDAYS, SUNDAYS, FARES]}
    result = ragsight.evaluate([row], ["context_precision", "context_recall"], judge=Judge(qwen_provider),  # type: ignore[arg-type]
                               options=ragsight.RunOptions(cache=False))
    score = result.scores["sunday"]["context_precision"]
    details = score.evidence.details
    assert details["by"] == "reference claims", details
    verdicts = [c["relevant"] for c in details["chunks"]]
    assert verdicts == [False, True, False], details["chunks"]
    assert score.value == 0.5
    assert details["chunks"][1]["supports"], details["chunks"]
    assert details["chunks"][1]["reason"].startswith("supports reference claim")
    assert result.scores["sunday"]["context_recall"].value == 1.0
