"""The engine on conversations: turn-level metrics score the turns (and single-turn samples),
conversation-level metrics the conversation's own sample; neither is run, nor counted, on the
other level. The result holds each conversation's mean of its scored turns."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from ragsight import Outcome, RunOptions, Score, Store, evaluate
from ragsight.analyses import SampleAnalyses
from ragsight.conversation import Conversation, Turn
from ragsight.metrics import REGISTRY, Metric, register
from ragsight.result import load_result
from ragsight.store import export_run, flat_rows


class TurnsMade(Metric):
    """A conversation-level metric for the test: the share of assistant turns that are not empty."""

    name = "turns_made"
    level: ClassVar[str] = "conversation"

    async def compute(self, ctx: SampleAnalyses) -> Score:
        turns = [t for t in ctx.sample.history or () if t.role == "assistant"]
        return Score.scored(self.key, sum(1 for t in turns if t.content) / len(turns), f"{len(turns)} turns")


@pytest.fixture(autouse=True)
def _registered() -> Iterator[None]:
    register(TurnsMade)  # a stored run's metrics are read back by name
    yield
    REGISTRY.pop("turns_made", None)


CONVS = [
    Conversation("a", (Turn("user", "Colour?"), Turn("assistant", "Red.", reference="Red."),
                       Turn("user", "Size?"), Turn("assistant", "Large.", reference="Small."))),
    Conversation("b", (Turn("user", "Price?"), Turn("assistant", "", reference="$5"),
                       Turn("user", "Stock?"), Turn("assistant", "Ten left."))),
]


def test_each_level_scores_its_own_samples_and_the_counts_stay_honest(tmp_path: Path) -> None:
    data = [*CONVS, {"id": "single", "question": "Colour?", "response": "Blue.", "reference": "Blue."}]
    res = evaluate(data, ["exact_match", TurnsMade()], store=tmp_path / "r.db",
                   options=RunOptions(show_progress=False))
    assert res.scores["a:0"]["exact_match"].value == 1.0 and "turns_made" not in res.scores["a:0"]
    assert res.scores["a"] == {"turns_made": res.scores["a"]["turns_made"]}
    assert res.scores["b"]["turns_made"].value == 0.5
    # exact_match: 4 turns + 1 single sample, no 'skipped' noise from the conversations' own samples
    assert res.summary["exact_match"].counts == {"scored": 3, "undetermined": 0, "failed": 0, "skipped": 2}
    assert res.summary["turns_made"].counts == {"scored": 2, "undetermined": 0, "failed": 0, "skipped": 0}
    assert res.shape == {"conversations": 2, "turns": 4, "single": 1}
    assert res.describe_shape() == "2 conversations, 4 assistant turns + 1 single-turn sample"
    # per conversation: the mean of its scored turns, with the four outcomes counted
    a, b = res.conversations["a"]["exact_match"], res.conversations["b"]["exact_match"]
    assert (a.outcome, a.value) == (Outcome.SCORED, 0.5)
    assert a.evidence.details["counts"] == {"scored": 2, "undetermined": 0, "failed": 0, "skipped": 0}
    assert b.outcome is Outcome.SKIPPED and b.value is None  # no turn of b could be scored: no NaN
    assert b.evidence.details["counts"]["skipped"] == 2
    assert res.conversation_summary["exact_match"].counts["scored"] == 1

    with Store(tmp_path / "r.db") as st:  # the stored run reads back the same way
        back = load_result(st, "last")
        assert back.conversations["a"]["exact_match"].value == 0.5
        rows = flat_rows(st, back.run_id, "python")
        export_run(st, back.run_id, "csv", tmp_path / "x.csv")
    assert [(r["id"], r["conversation_id"], r["turn"]) for r in rows] == [
        ("a:0", "a", 0), ("a:1", "a", 1), ("a", "a", None), ("b:0", "b", 0), ("b:1", "b", 1), ("b", "b", None),
        ("single", None, None)]
    conv_row = rows[2]
    assert (conv_row["turns_made"], conv_row["exact_match__outcome"]) == (1.0, "")  # not 'missing'
    assert rows[0]["turns_made__outcome"] == "" and rows[6]["turns_made__outcome"] == ""
    assert tmp_path.joinpath("x.csv").read_text().splitlines()[0].startswith("run_id,id,conversation_id,turn,")


def test_a_single_turn_run_is_unchanged_by_conversations(tmp_path: Path) -> None:
    res = evaluate([{"id": "s", "question": "q", "response": "a", "reference": "a"}], ["exact_match"],
                   store=tmp_path / "r.db", options=RunOptions(show_progress=False))
    assert res.conversations == {} and res.conversation_summary == {}
    assert res.describe_shape() == "1 sample"
    assert set(res.records()[0]) == {"id", "run_id", "scores", "evidence", "question", "contexts", "response",
                                     "reference", "reference_contexts", "retrieved_ids", "relevant_ids", "metadata"}


def test_compare_pairs_turns_by_conversation_and_turn(tmp_path: Path) -> None:
    from ragsight.report import compare_runs
    from ragsight.sample import Sample

    store = tmp_path / "r.db"
    a = evaluate(CONVS, ["exact_match"], store=store, options=RunOptions(show_progress=False))
    # the same conversations under other sample ids, the second answer of 'a' now right
    other = [Sample(f"x{i}", question=s.question, response=s.response, reference=s.reference,
                    conversation_id=s.conversation_id, turn=s.turn, history=s.history) for i, s in enumerate(a.samples)]
    other[1] = Sample("x1", question="Size?", response="Small.", reference="Small.", conversation_id="a", turn=1)
    b = evaluate(other, ["exact_match"], store=store, options=RunOptions(show_progress=False))
    with Store(store) as st:
        cmp = compare_runs(st, [a.run_id, b.run_id], allow_poor_pairing=False)
    (row,) = cmp.paired
    # the 4 turns paired although every sample id differs; exact_match is a turn metric, so the
    # 2 conversations (paired too) are not among its rows
    assert row.shared == 4 and row.level == "turn"
    assert cmp.pairing[0].paired == 6
    assert row.difference.n == 2  # the turns scored on both sides: a:0 and a:1 (b has nothing to score)
    assert (row.difference.mean_a, row.difference.mean_b) == (0.5, 1.0)


def test_calibrate_takes_labels_per_turn(tmp_path: Path) -> None:
    from ragsight.report import calibrate

    res = evaluate(CONVS, ["exact_match"], store=tmp_path / "r.db", options=RunOptions(show_progress=False))
    labels = tmp_path / "labels.csv"
    labels.write_text("conversation_id,turn,label\na,0,1\na,1,0\nb,0,1\nb,1,0\nzz,0,1\n")
    report = calibrate(res, labels, metrics=["exact_match"], allow_poor_pairing=True)
    # a:0 and a:1 are scored; b's turns are skipped; zz has no turn in the run
    assert (report.n_labels, report.matched) == (5, 4)
    assert report.unmatched_ids == ("conversation zz turn 0",)
    (m,) = report.metrics
    assert m.n == 2 and m.auroc == 1.0  # a:0 (right, label 1) above a:1 (wrong, label 0)


def test_resume_scores_the_unfinished_turns_and_conversations_at_their_level(tmp_path: Path) -> None:
    store = tmp_path / "r.db"
    first = evaluate(CONVS, ["exact_match", TurnsMade()], store=store,
                     options=RunOptions(show_progress=False))
    with Store(store) as st:  # as if the run had stopped before a:1 and the conversation b
        st.conn.execute("UPDATE samples SET finished=0 WHERE run_id=? AND sample_id IN ('a:1', 'b')",
                        (first.run_id,))
        st.conn.execute("DELETE FROM scores WHERE run_id=? AND sample_id IN ('a:1', 'b')", (first.run_id,))
        st.conn.execute("UPDATE runs SET status='interrupted', lock_owner=NULL WHERE id=?", (first.run_id,))
        st.conn.commit()
    again = evaluate(CONVS, ["exact_match", TurnsMade()], store=store, resume=first.run_id,
                     options=RunOptions(show_progress=False))
    assert again.run_id == first.run_id
    assert again.scores == first.scores  # each sample scored again with its own level's metrics only
    assert again.summary["exact_match"].counts == first.summary["exact_match"].counts


# ---- generate: a two-turn conversation whose follow-up needs the first turn ----------------------

DOCS = {"alder.md": "Alder Bank was founded in 1987 by Nora Quist in Tromso. The bank runs 42 branches "
                    "across Norway. Its headquarters moved to Bergen in 2004, when the old office closed."}


async def test_generate_follow_up_writes_a_conversation_that_loads_turn_by_turn(tmp_path: Path) -> None:
    from ragsight.judge import Judge, ScriptedProvider
    from ragsight.testset import TestsetSettings, agenerate, load_corpus

    (tmp_path / "alder.md").write_text(DOCS["alder.md"], "utf-8")
    corpus = load_corpus(tmp_path)
    seen: list[str] = []

    def gen(v: dict) -> dict:
        seen.append(v["contexts"])
        return {"question": "In which year was Alder Bank founded?", "answer": "Alder Bank was founded in 1987.",
                "follow_up": "And where is its headquarters now?",
                "follow_up_answer": "The headquarters of Alder Bank is in Bergen."}

    def crit(v: dict) -> dict:
        return {"reason": "scripted", "answerable": True, "self_contained": True, "copied": False}

    result = await agenerate(corpus, Judge(ScriptedProvider({"testset_follow_up": gen}, model="g")),
                             Judge(ScriptedProvider({"testset_critique": crit}, model="c")), None,
                             TestsetSettings(size=1, types={"follow_up": 1.0}, attempts=1))
    (row,) = result.rows
    assert row["turns"] == [
        {"role": "user", "content": "In which year was Alder Bank founded?"},
        {"role": "assistant", "reference": "Alder Bank was founded in 1987."},
        {"role": "user", "content": "And where is its headquarters now?"},
        {"role": "assistant", "reference": "The headquarters of Alder Bank is in Bergen."}]
    meta = row["metadata"]
    assert meta["question_type"] == "follow_up" and meta["follow_up_grounding"] == 1.0
    assert meta["prompts"]["testset_follow_up"] == "1"
    # answered turn by turn, it loads as two turns with their references
    answered = dict(row, turns=[row["turns"][0], {"role": "assistant", "content": "In 1987.",
                                                  "reference": row["turns"][1]["reference"]},
                                row["turns"][2], {"role": "assistant", "content": "In Bergen.",
                                                  "reference": row["turns"][3]["reference"]}])
    from ragsight import Dataset

    _, s1, _ = Dataset.load([answered]).samples
    assert (s1.question, s1.reference, s1.history[0].content) == (  # type: ignore[index]
        "And where is its headquarters now?", "The headquarters of Alder Bank is in Bergen.",
        "In which year was Alder Bank founded?")


async def test_a_follow_up_whose_answer_is_not_in_the_text_is_rejected(tmp_path: Path) -> None:
    from ragsight.judge import Judge, ScriptedProvider
    from ragsight.testset import TestsetSettings, agenerate, load_corpus

    (tmp_path / "alder.md").write_text(DOCS["alder.md"], "utf-8")
    gen = {"question": "In which year was Alder Bank founded?", "answer": "Alder Bank was founded in 1987.",
           "follow_up": "Who is its chief executive today?", "follow_up_answer": "Magnus Eriksen leads it since 2019."}
    result = await agenerate(load_corpus(tmp_path), Judge(ScriptedProvider({"testset_follow_up": lambda v: gen})),
                             Judge(ScriptedProvider({})), None,
                             TestsetSettings(size=1, types={"follow_up": 1.0}, attempts=1))
    assert result.rows == []
    assert result.rejected[0]["reasons"] == ["reference_not_grounded"]


def test_a_csv_export_reloads_its_turns_and_conversations_and_names_an_old_exports_rows(tmp_path: Path) -> None:
    import csv

    from ragsight import Dataset

    res = evaluate(CONVS, ["exact_match"], store=tmp_path / "r.db", options=RunOptions(show_progress=False))
    with Store(tmp_path / "r.db") as st:
        export_run(st, res.run_id, "csv", tmp_path / "x.csv")
    ds = Dataset.load(tmp_path / "x.csv")
    assert [(s.id, s.conversation_id, s.turn) for s in ds.samples] == [
        (s.id, s.conversation_id, s.turn) for s in res.samples]
    assert [s.history for s in ds.samples] == [s.history for s in res.samples]
    assert ds.problems == []
    # an export written before the rows held the history: the turns load, the conversations'
    # own rows are named
    with (tmp_path / "x.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    old = ["run_id", "id", "conversation_id", "turn", "question", "response", "reference", "metadata"]
    with (tmp_path / "old.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=old, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    ds = Dataset.load(tmp_path / "old.csv")
    assert [(s.id, s.conversation_id, s.turn) for s in ds.samples] == [
        ("a:0", "a", 0), ("a:1", "a", 1), ("b:0", "b", 0), ("b:1", "b", 1)]
    assert [(p.field, p.message.split(":")[0]) for p in ds.problems] == [
        ("history", "conversation 'a'"), ("history", "conversation 'b'")]
    assert "Export the run again" in ds.problems[0].message
