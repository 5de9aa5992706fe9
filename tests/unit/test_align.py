"""Alignment from labels (scripted judges): the threshold and the worked examples are fitted on
some samples and judged on others; a non-improving alignment says so; an alignment applied to a
run changes its claim verdicts, names its prompt variant in the trail and itself in the record."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import ragsight
from ragsight.analyses import AnalysisSettings
from ragsight.errors import InputError
from ragsight.judge import ChoiceScores, JudgeRequest, ScriptedProvider
from ragsight.report import align, load_alignment
from ragsight.store import Label, Store

N = 40
CONTEXT = "Aurora Airways lets each passenger bring one cabin bag of up to 8 kg on board."


def rows() -> list[dict[str, Any]]:
    out = []
    for i in range(N):
        claim = f"Passenger {i} may bring {'one cabin bag' if i % 2 == 0 else 'three cabin bags'} on board."
        out.append({"id": f"s{i:02d}", "question": f"What may passenger {i} bring?", "contexts": [CONTEXT],
                    "response": claim})
    return out


def truth(i: int) -> bool:
    return i % 2 == 0


def p_yes(i: int) -> float:
    """A miscalibrated judge: supported claims get 0.30-0.80 (most below 0.5), unsupported 0.05-0.25."""
    return [0.30, 0.35, 0.40, 0.80][(i // 2) % 4] if truth(i) else [0.05, 0.1, 0.15, 0.25][(i // 2) % 4]


class ExamplesJudge(ScriptedProvider):
    """Answers like ``p_yes``; with worked examples in its system message, answers right
    (0.9 / 0.1) when ``learns``."""

    def __init__(self, learns: bool, calibrated: bool = False) -> None:
        self.learns, self.calibrated_judge, self.saw_examples = learns, calibrated, False
        self._examples = False
        super().__init__({}, choice_handlers={"verify_claim": self._p}, model="scripted")
        self.handlers["explain_verdict"] = lambda v: {"reason": "scripted reason"}

    def _p(self, v: Mapping[str, Any]) -> float:
        i = int(v["claim_text"].split()[1])
        if self.calibrated_judge or (self._examples and self.learns):
            return 0.9 if truth(i) else 0.1
        return p_yes(i)

    async def score_choices(self, request: JudgeRequest, choices: Sequence[str]) -> ChoiceScores:
        self._examples = "Worked examples" in request.messages[0].content
        self.saw_examples = self.saw_examples or self._examples
        return await super().score_choices(request, choices)


def evaluated(tmp_path: Path, judge: ScriptedProvider) -> tuple[Store, str]:
    result = ragsight.evaluate(rows(), ["faithfulness"], judge=judge, store=tmp_path / "r.db")
    store = Store(tmp_path / "r.db")
    keys = store.sample_keys(result.run_id)
    store.add_labels([Label(keys[r["id"]], "faithfulness", 1.0 if truth(i) else 0.0, who="ana")
                      for i, r in enumerate(rows())])
    return store, result.run_id


def test_the_threshold_is_fitted_and_judged_on_held_out_samples(tmp_path: Path) -> None:
    store, run_id = evaluated(tmp_path, ExamplesJudge(learns=False))
    with store:
        a = align(store, run_id, "faithfulness", "human", folds=5)
    # before: the run's 0.5 calls the 15 supported claims at 0.30-0.40 unsupported: 25 of 40 right
    assert (a.before.n, a.before.accuracy) == (40, pytest.approx(25 / 40))
    assert a.threshold is not None and 0.25 < a.threshold < 0.30  # between the two groups
    assert a.after.accuracy == 1.0 and a.after.kappa == 1.0
    assert a.improved and a.fitted == ("threshold",) and a.examples == ()
    assert (a.n_claims, a.n_samples, a.folds) == (40, 40, 5)
    path = a.save(tmp_path / "a.json")
    assert load_alignment(path) == a


def test_an_alignment_that_does_not_improve_held_out_agreement_says_so(tmp_path: Path) -> None:
    store, run_id = evaluated(tmp_path, ExamplesJudge(learns=False, calibrated=True))
    with store:
        a = align(store, run_id, "faithfulness", "human")
    assert a.before.kappa == 1.0 and not a.improved
    assert "did not improve (kappa 1.000 before, 1.000 after" in a.reason


def test_worked_examples_are_judged_by_asking_the_judge_again(tmp_path: Path) -> None:
    judge = ExamplesJudge(learns=True)
    store, run_id = evaluated(tmp_path, judge)
    assert not judge.saw_examples
    with store:
        a = align(store, run_id, "faithfulness", "human", judge=judge, examples=4, folds=4)
    assert judge.saw_examples
    assert a.fitted == ("threshold", "examples") and len(a.examples) == 4
    # chosen from disagreements: the judge called these supported claims unsupported
    assert all(ex.supported and "one cabin bag" in ex.claim for ex in a.examples)
    assert all("8 kg" in ex.evidence for ex in a.examples)
    assert a.improved and a.after.kappa == 1.0
    block = a.examples_block()
    assert block.count("<claim>") == 4 and "never instructions" in block

    # applied to a new run: the verdict prompt's variant is in the trail, the alignment in the record
    result = ragsight.evaluate(rows()[:6], ["faithfulness"], judge=judge, store=tmp_path / "new.db",
                               options=ragsight.RunOptions(settings=a.settings(AnalysisSettings())))
    with Store(tmp_path / "new.db") as st:
        calls = st.judge_calls(result.run_id)
        settings = st.run(result.run_id).config["settings"]
    versions = {c["prompt_version"] for c in calls if c["prompt_id"] == "verify_claim"}
    assert versions == {f"2+{a.tag}"}
    assert settings["alignment"] == f"faithfulness:{a.tag}" and settings["support_threshold"] == a.threshold
    claims = [result.scores[r["id"]]["faithfulness"].evidence.claims[0] for r in rows()[:6]]
    assert [c.supported for c in claims] == [truth(i) for i in range(6)]


def test_too_few_labels_is_refused_with_the_reason(tmp_path: Path) -> None:
    store, run_id = evaluated(tmp_path, ExamplesJudge(learns=False))
    with store:
        for lb in store.labels(run_id)[:25]:
            store.delete_label(lb)
        with pytest.raises(InputError, match="only 15 labelled claim"):
            align(store, run_id, "faithfulness", "human")
        with pytest.raises(InputError, match="no labels 'expert'"):
            align(store, run_id, "faithfulness", "expert")
