"""Gate merges on RAG quality from pytest.

    from ragsight.testing import assert_scores, cases

    @pytest.mark.parametrize("sample", cases("tests/golden.jsonl"))
    def test_golden(sample):
        assert_scores(sample, {"faithfulness": 0.8, "context_recall": 0.7})

The pytest plugin (installed with ragsight, entry point ``pytest11``) adds ``--ragsight-judge``,
``--ragsight-base-url``, ``--ragsight-store`` and ``--ragsight-report report.html``, and prints a
summary of every ``assert_scores`` call at the end of the session; see
docs/integrations/pytest.md.
"""

from ._assert import (
    PLUGIN_MODULE,
    RunRecord,
    ScoresBelowThresholdError,
    UnusableRow,
    aassert_scores,
    assert_scores,
    cases,
    summary_lines,
    write_session_report,
)

__all__ = [
    "PLUGIN_MODULE",
    "RunRecord",
    "ScoresBelowThresholdError",
    "UnusableRow",
    "aassert_scores",
    "assert_scores",
    "cases",
    "summary_lines",
    "write_session_report",
]
