"""The embedded judge on claims its chunk says otherwise about: word overlap no longer lifts them.

Two claims against passages of Debian's manual pages, each contradicted by the passage's closest
sentence (a negation) while sharing nearly all of its words. The real judge doubts them (P(Yes)
below 0.5); before the conflict guard the mean of its P(Yes) and word overlap accepted them (a
new user's "you can change the page size at any time in WAL mode" went from 0.39 to 0.51 so).
Now each verdict's P(supported) is at most the judge's, and faithfulness is 0.

Slow: loads the 1.1 GB model once per session; two claim verdicts.
"""

from __future__ import annotations

import pytest

import ragsight
from ragsight.analyses._calibrated import combine
from ragsight.judge import Judge

pytestmark = [pytest.mark.slow, pytest.mark.local]

FLOCK = ("flock does not detect deadlock. See flock(2) for details. Some file systems (e. g. NFS and CIFS) have "
         "a limited implementation of flock(2) and flock may always fail.")
DU = ("-L, --dereference: dereference all symbolic links. -P, --no-dereference: don't follow any symbolic "
      "links (this is the default).")


def test_a_contradicted_claim_stays_below_the_threshold(qwen_provider: object) -> None:
    rows = [{"id": "flock", "question": "Does flock detect deadlock?", "response": "flock detects deadlock.",
             "contexts": [FLOCK]},
            {"id": "du", "question": "Does du follow symbolic links?",
             "response": "du follows all symbolic links by default.", "contexts": [DU]}]
    result = ragsight.evaluate(rows, ["faithfulness"], judge=Judge(qwen_provider),  # type: ignore[arg-type]
                               options=ragsight.RunOptions(show_progress=False))
    for sid in ("flock", "du"):
        score = result.scores[sid]["faithfulness"]
        (claim,) = score.evidence.claims
        sig = claim.signals or {}
        assert sig["judge_yes"] < 0.5, (sid, sig)  # the model doubts the claim
        assert sig["says_otherwise_negation"] == 1.0 and sig["capped_by_conflict"] == 1.0
        assert combine(sig["judge_yes"], sig, conflict_guard=False) >= 0.5  # what overlap made of it before
        assert claim.probability is not None and claim.probability < 0.5 and not claim.supported
        assert score.value == 0.0
