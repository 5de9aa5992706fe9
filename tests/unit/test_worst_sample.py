"""The run's lowest score is a failure: a correct decline (an out-of-scope question the response
declines) is never it, whatever a word-matching metric gave the decline."""

from __future__ import annotations

import ragsight

ROWS = [
    {"id": "declined", "question": "Who is the CEO?", "response": "The documents do not say who the CEO is.",
     "reference": "Not covered.", "out_of_scope": True},
    {"id": "partial", "question": "When does the office open?", "response": "The office opens at nine.",
     "reference": "The office opens at 8 am on weekdays."},
    {"id": "declined_in_scope", "question": "When does it close?", "response": "I don't know.",
     "reference": "It closes at 6 pm."},
]


def test_a_correct_decline_is_never_the_lowest_score() -> None:
    result = ragsight.evaluate(ROWS[:2], ["token_f1"])
    values = {sid: per["token_f1"].value for sid, per in result.scores.items()}
    assert values["declined"] < values["partial"]  # the metric gives it little to match ...
    assert result.worst() == ("partial", "token_f1", values["partial"])  # ... but it did the right thing


def test_a_decline_where_the_documents_hold_the_answer_still_counts() -> None:
    result = ragsight.evaluate(ROWS, ["token_f1"])
    worst = result.worst()
    assert worst is not None and worst[0] == "declined_in_scope"
