"""Test-set generation with a scripted generator and critic: every question type, every filter
decision, determinism, the rows' fields, and the command line."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from ragsight import Dataset
from ragsight.errors import ConfigError
from ragsight.judge import Judge, MemoryCallCache, ScriptedProvider
from ragsight.testset import (
    OUT_OF_SCOPE_REFERENCE,
    Corpus,
    FilterSettings,
    TestsetSettings,
    agenerate,
    load_corpus,
)
from ragsight.testset._filter import deterministic_checks, grounding, longest_common_ngram
from ragsight.testset._pairs import entity_pairs
from ragsight.testset._plan import parse_mix, plan, quotas
from tests.fakes.embedder import TableEmbedder

DOCS = {
    "alder.md": "Alder Bank was founded in 1987 by Nora Quist in Tromso. The bank runs 42 branches "
    "across Norway. Its headquarters moved to Bergen in 2004, when the old office closed.",
    "quist.md": "Nora Quist retired as chief executive in 2012. Her successor was Ivar Lunde, who had "
    "run the Bergen headquarters since 2004. Under Ivar Lunde the network shrank to 30 "
    "branches, mostly in cities.",
    "birch.md": "Birch Credit is a smaller lender founded in 1999 in Gothenburg. It has 12 branches, "
    "all of them in Sweden. Birch Credit has belonged to the Alder Bank group since 2015.",
}
ALDER, QUIST, BIRCH = (DOCS[k] for k in ("alder.md", "quist.md", "birch.md"))

Handler = Callable[[Mapping[str, Any]], Any]


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    for name, text in DOCS.items():
        (tmp_path / name).write_text(text, "utf-8")
    return load_corpus(tmp_path)


def contexts_of(v: Mapping[str, Any]) -> list[str]:
    """The chunk texts inside a rendered ``contexts`` value."""
    return [
        " ".join(m.split())
        for m in re.findall(r"<chunk n=\"\d+\">\n(.*?)\n</chunk>", v["contexts"], re.S)
    ]


def qa(question: str, answer: str) -> Handler:
    return lambda v: {"question": question, "answer": answer}


def critic(answerable: bool = True, self_contained: bool = True, copied: bool = False) -> Handler:
    return lambda v: {
        "reason": "scripted",
        "answerable": answerable,
        "self_contained": self_contained,
        "copied": copied,
    }


def judge(handlers: Mapping[str, Handler], model: str = "scripted") -> Judge:
    return Judge(ScriptedProvider(dict(handlers), model=model))


def one(qtype: str, **kw: Any) -> TestsetSettings:
    return TestsetSettings(size=1, types={qtype: 1.0}, attempts=1, **kw)


async def generate(
    corpus: Corpus,
    gen: Mapping[str, Handler],
    crit: Mapping[str, Handler] | None = None,
    settings: TestsetSettings | None = None,
    embedder: Any = None,
) -> Any:
    g = judge(gen, "gen-model")
    c = judge(crit, "critic-model") if crit is not None else None
    return await agenerate(corpus, g, c, embedder, settings or one("single_hop"))


# ---- planning --------------------------------------------------------------------------------


def test_parse_mix_and_quotas() -> None:
    mix = parse_mix(
        "single_hop=2,reasoning=1,out_of_scope=1",
        ("single_hop", "reasoning", "out_of_scope"),
        "types",
        {},
    )
    assert mix == {"single_hop": 0.5, "reasoning": 0.25, "out_of_scope": 0.25}
    assert quotas(10, mix) == {
        "single_hop": 5,
        "reasoning": 3,
        "out_of_scope": 2,
    }  # ties: earlier first
    assert sum(quotas(7, {"a": 0.4, "b": 0.2, "c": 0.15, "d": 0.1, "e": 0.15}).values()) == 7
    with pytest.raises(ConfigError, match="unknown type 'multihop'"):
        parse_mix("multihop=1", ("single_hop",), "types", {})
    with pytest.raises(ConfigError, match="unknown style"):
        TestsetSettings(styles="shouting=1")


def test_pairs_share_named_entities_across_documents(corpus: Corpus) -> None:
    pairs = entity_pairs(corpus)
    linked = {(a, b): shared for _, a, b, shared in pairs}
    assert set(linked["alder.md#0", "quist.md#0"]) == {"Nora Quist", "Bergen", "2004"}
    assert set(linked["alder.md#0", "birch.md#0"]) == {"Alder Bank"}
    assert pairs[0][1:3] == ("alder.md#0", "quist.md#0")  # the most shared ranks first
    assert all(a.split("#")[0] != b.split("#")[0] for _, a, b, _ in pairs)


def test_plan_is_deterministic_per_seed(corpus: Corpus) -> None:
    s0 = TestsetSettings(size=20, seed=0)
    a, qa_, _ = plan(corpus, s0)
    b, _, _ = plan(corpus, TestsetSettings(size=20, seed=0))
    c, _, _ = plan(corpus, TestsetSettings(size=20, seed=1))
    assert a == b
    assert a != c
    assert qa_ == {
        "single_hop": 8,
        "multi_context": 4,
        "reasoning": 3,
        "comparative": 2,
        "out_of_scope": 3,
    }
    styles = {s.style for specs in a.values() for s in specs}
    assert styles == {"well_formed", "keywords", "informal_typos", "long_detailed"}
    assert all(len(s.chunk_ids) == 2 for s in a["multi_context"] + a["comparative"])


# ---- each question type ----------------------------------------------------------------------


async def test_single_hop_row_has_every_field(corpus: Corpus) -> None:
    def gen(v: Mapping[str, Any]) -> Any:
        assert len(contexts_of(v)) == 1
        (text,) = contexts_of(v)
        if text == ALDER:
            return {
                "question": "In which year was Alder Bank founded?",
                "answer": "Alder Bank was founded in 1987.",
            }
        if text == QUIST:
            return {
                "question": "When did Nora Quist retire?",
                "answer": "Nora Quist retired in 2012.",
            }
        return {
            "question": "How many branches does Birch Credit have?",
            "answer": "Birch Credit has 12 branches.",
        }

    result = await generate(
        corpus,
        {"testset_single_hop": gen},
        {"testset_critique": critic()},
        one("single_hop", seed=3),
    )
    (row,) = result.rows
    meta = row["metadata"]
    chunk_id = meta["reference_context_ids"][0]
    assert row["relevant_ids"] == [chunk_id]
    assert row["reference_contexts"] == [corpus.chunk(chunk_id).text]
    assert meta["question_type"] == "single_hop"
    assert meta["style"] in {"well_formed", "keywords", "informal_typos", "long_detailed"}
    assert meta["testset_generator"] == "scripted:gen-model"
    assert meta["testset_critic"] == "scripted:critic-model"
    assert meta["seed"] == 3
    assert meta["prompts"] == {"testset_single_hop": "1", "testset_critique": "2", "styles": "1"}
    assert row["id"].startswith("ts-")
    # the reference's facts are in the reference context, and the check measured it
    assert meta["grounding"] == 1.0
    # the row loads as a sample with no warning (no unknown or duplicate fields)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = Dataset.from_records(result.rows)
    assert ds[0].relevant_ids == (chunk_id,) and ds[0].reference == row["reference"]


async def test_the_style_instruction_reaches_the_generator(corpus: Corpus) -> None:
    seen: list[str] = []

    def gen(v: Mapping[str, Any]) -> Any:
        seen.append(v["style"])
        return {
            "question": "Alder Bank founding year?",
            "answer": "Alder Bank was founded in 1987.",
        }

    await generate(
        corpus,
        {"testset_single_hop": gen},
        {"testset_critique": critic()},
        one("single_hop", styles="keywords=1"),
    )
    assert len(seen) == 1 and seen[0].startswith("a short search-engine query")


async def test_multi_context_uses_two_linked_chunks(corpus: Corpus) -> None:
    def gen(v: Mapping[str, Any]) -> Any:
        texts = contexts_of(v)
        assert len(texts) == 2
        assert "Alder Bank" in v["shared"] or "Nora Quist" in v["shared"]
        return {
            "question": "Who founded Alder Bank, and who succeeded the founder as chief executive?",
            "answer": "Nora Quist founded Alder Bank in 1987; Ivar Lunde succeeded her in 2012.",
        }

    settings = TestsetSettings(size=1, types={"multi_context": 1.0}, attempts=1, seed=0)
    specs, _, _ = plan(corpus, settings)
    assert specs["multi_context"][0].chunk_ids == ("alder.md#0", "quist.md#0")
    result = await generate(
        corpus, {"testset_multi_context": gen}, {"testset_critique": critic()}, settings
    )
    (row,) = result.rows
    assert row["relevant_ids"] == ["alder.md#0", "quist.md#0"]
    assert row["reference_contexts"] == [ALDER, QUIST]
    assert row["metadata"]["shared_entities"]
    assert all(n > 0 for n in row["metadata"]["tokens_per_context"])  # both chunks contribute


async def test_multi_context_answer_from_one_chunk_is_rejected(corpus: Corpus) -> None:
    gen = qa(
        "Where did Alder Bank move its headquarters in 2004?",
        "Alder Bank moved its headquarters to Bergen in 2004.",
    )
    settings = TestsetSettings(size=1, types={"multi_context": 1.0}, attempts=1, seed=0)
    result = await generate(
        corpus, {"testset_multi_context": gen}, {"testset_critique": critic()}, settings
    )
    assert result.rows == []
    assert result.rejected[0]["reasons"] == ["single_chunk"]


async def test_reasoning(corpus: Corpus) -> None:
    def gen(v: Mapping[str, Any]) -> Any:
        (text,) = contexts_of(v)
        assert text in (ALDER, QUIST, BIRCH)
        return {
            "question": "How many years after Alder Bank's founding did Nora Quist retire?",
            "answer": "Alder Bank was founded in 1987 and Nora Quist retired in 2012, 25 years later.",
        }

    result = await generate(
        corpus,
        {"testset_reasoning": gen},
        {"testset_critique": critic()},
        TestsetSettings(
            size=1, types={"reasoning": 1.0}, attempts=1, filter=FilterSettings(min_grounding=0.3)
        ),
    )
    (row,) = result.rows
    assert row["metadata"]["question_type"] == "reasoning"
    assert len(row["relevant_ids"]) == 1


async def test_comparative(corpus: Corpus) -> None:
    gen = qa(
        "Which has more branches, Alder Bank or Birch Credit?",
        "Alder Bank runs 42 branches and Birch Credit has 12, so Alder Bank has more.",
    )
    result = await generate(
        corpus,
        {"testset_comparative": gen},
        {"testset_critique": critic()},
        TestsetSettings(size=1, types={"comparative": 1.0}, attempts=3),
    )
    assert len(result.rows) == 1
    row = result.rows[0]
    assert row["metadata"]["question_type"] == "comparative" and len(row["relevant_ids"]) == 2


async def test_out_of_scope_is_checked_against_the_related_corpus(corpus: Corpus) -> None:
    shown: list[list[str]] = []

    def crit(v: Mapping[str, Any]) -> Any:
        shown.append(contexts_of(v))
        return {"reason": "no excerpt names a mascot", "answerable": False, "self_contained": True}

    def gen(v: Mapping[str, Any]) -> Any:
        return {
            "question": "What is the name of Alder Bank's mascot?",
            "missing": "no mascot is named",
        }

    result = await generate(
        corpus, {"testset_out_of_scope": gen}, {"testset_critique_oos": crit}, one("out_of_scope")
    )
    (row,) = result.rows
    assert row["reference"] == OUT_OF_SCOPE_REFERENCE
    assert row["reference_contexts"] == [] and row["relevant_ids"] == []
    assert row["metadata"]["missing"] == "no mascot is named"
    assert set(shown[0]) == {ALDER, QUIST, BIRCH}  # the whole (small) corpus was shown
    assert sorted(row["metadata"]["critic_chunks"]) == ["alder.md#0", "birch.md#0", "quist.md#0"]
    assert row["metadata"]["prompts"]["testset_critique_oos"] == "1"


async def test_out_of_scope_that_the_corpus_answers_is_rejected(corpus: Corpus) -> None:
    def gen(v: Mapping[str, Any]) -> Any:
        return {"question": "Who succeeded Nora Quist?", "missing": "nothing"}

    crit = {
        "testset_critique_oos": lambda v: {
            "reason": "Ivar Lunde",
            "answerable": True,
            "self_contained": True,
        }
    }
    result = await generate(corpus, {"testset_out_of_scope": gen}, crit, one("out_of_scope"))
    assert result.rows == []
    assert result.rejected[0]["reasons"] == ["answerable_from_corpus"]


# ---- each filter decision --------------------------------------------------------------------

GOOD = qa("In which year was Alder Bank founded?", "Alder Bank was founded in 1987.")


def _only(corpus: Corpus, text: str) -> TestsetSettings:
    """Settings whose single candidate uses the chunk with ``text``."""
    for seed in range(50):
        s = one("single_hop", seed=seed)
        specs, _, _ = plan(corpus, s)
        if corpus.chunk(specs["single_hop"][0].chunk_ids[0]).text == text:
            return s
    raise AssertionError("no seed picks that chunk")


async def test_accepted(corpus: Corpus) -> None:
    result = await generate(
        corpus, {"testset_single_hop": GOOD}, {"testset_critique": critic()}, _only(corpus, ALDER)
    )
    assert len(result.rows) == 1 and result.rejected == []
    assert result.acceptance_rate == 1.0


@pytest.mark.parametrize(
    ("crit", "reasons"),
    [
        (critic(answerable=False), ["not_answerable"]),
        (critic(self_contained=False), ["not_self_contained"]),
        (critic(copied=True), ["copied"]),
        (critic(answerable=False, self_contained=False), ["not_answerable", "not_self_contained"]),
    ],
)
async def test_critic_rejections(corpus: Corpus, crit: Handler, reasons: list[str]) -> None:
    result = await generate(
        corpus, {"testset_single_hop": GOOD}, {"testset_critique": crit}, _only(corpus, ALDER)
    )
    assert result.rows == []
    (rej,) = result.rejected
    assert rej["reasons"] == reasons
    assert rej["question"] == "In which year was Alder Bank founded?"
    assert rej["details"]["critic_reason"] == "scripted"
    assert result.rejected_by_reason == dict.fromkeys(reasons, 1)


async def test_copied_question_is_rejected_without_asking_the_critic(corpus: Corpus) -> None:
    gen = qa(
        "Alder Bank was founded in 1987 by Nora Quist in Tromso?", "Alder Bank was founded in 1987."
    )
    crit = ScriptedProvider({"testset_critique": critic()})
    result = await agenerate(
        corpus, judge({"testset_single_hop": gen}), Judge(crit), None, _only(corpus, ALDER)
    )
    assert result.rejected[0]["reasons"] == ["copied"]
    assert result.rejected[0]["details"]["copied_ngram"] == 11
    assert crit.requests == []  # a deterministic rejection costs no critic call


async def test_reference_not_in_its_context_is_rejected(corpus: Corpus) -> None:
    gen = qa("Who audits Alder Bank's accounts?", "KPMG audits the accounts every spring in Oslo.")
    result = await generate(
        corpus, {"testset_single_hop": gen}, {"testset_critique": critic()}, _only(corpus, ALDER)
    )
    rej = result.rejected[0]
    assert rej["reasons"] == ["reference_not_grounded"]
    assert rej["details"]["grounding"] < 0.5
    assert "kpmg" in rej["details"]["ungrounded_tokens"]


async def test_near_duplicates_are_removed(corpus: Corpus) -> None:
    q1, q2 = "When was Alder Bank founded?", "In what year was Alder Bank established?"

    def gen(v: Mapping[str, Any]) -> Any:
        (text,) = contexts_of(v)
        if text == BIRCH:
            return {
                "question": q2,
                "answer": "Birch Credit belongs to the Alder Bank group since 2015.",
            }
        return {
            "question": q1,
            "answer": "Alder Bank was founded in 1987."
            if text == ALDER
            else "Nora Quist retired in 2012.",
        }

    emb = TableEmbedder({q1: [1.0, 0.0, 0.0], q2: [0.96, 0.28, 0.0]})  # cosine 0.96
    settings = TestsetSettings(size=3, types={"single_hop": 1.0}, attempts=1)
    result = await generate(
        corpus, {"testset_single_hop": gen}, {"testset_critique": critic()}, settings, emb
    )
    reasons = sorted(r["reasons"][0] for r in result.rejected)
    assert reasons == ["duplicate", "duplicate"]  # one exact repeat of q1, one paraphrase
    assert [r["question"] for r in result.rows] == [q1]
    para = next(r for r in result.rejected if r["question"] == q2)
    assert para["details"]["max_similarity"] == pytest.approx(0.96)
    # with a higher threshold the paraphrase stays
    loose = TestsetSettings(
        size=3, types={"single_hop": 1.0}, attempts=1, filter=FilterSettings(dedup_threshold=0.97)
    )
    result = await generate(
        corpus, {"testset_single_hop": gen}, {"testset_critique": critic()}, loose, emb
    )
    assert sorted(r["question"] for r in result.rows) == sorted([q1, q2])


async def test_generation_failure_is_counted(corpus: Corpus) -> None:
    result = await generate(
        corpus, {"testset_single_hop": lambda v: "not json at all"}, None, _only(corpus, ALDER)
    )
    assert result.rows == []
    assert result.rejected[0]["reasons"] == ["generation_failed"]
    assert result.rejected[0]["question"] is None


async def test_rejections_are_retried_up_to_the_attempts(corpus: Corpus) -> None:
    calls: list[int] = []

    def crit(v: Mapping[str, Any]) -> Any:
        calls.append(1)
        return {
            "reason": "x",
            "answerable": len(calls) == 3,
            "self_contained": True,
            "copied": False,
        }

    def gen(v: Mapping[str, Any]) -> Any:
        (text,) = contexts_of(v)
        return {
            "question": f"What does this say about {text.split()[0]} {len(calls)}?",
            "answer": text.split(". ")[0] + ".",
        }

    settings = TestsetSettings(size=1, types={"single_hop": 1.0}, attempts=3)
    result = await generate(
        corpus, {"testset_single_hop": gen}, {"testset_critique": crit}, settings
    )
    assert len(result.rows) == 1 and len(result.rejected) == 2 and result.candidates == 3
    settings = TestsetSettings(size=1, types={"single_hop": 1.0}, attempts=2)
    calls.clear()
    result = await generate(
        corpus, {"testset_single_hop": gen}, {"testset_critique": crit}, settings
    )
    assert result.rows == [] and result.candidates == 2
    assert result.notes == ["single_hop: 0 of 1 accepted after 2 candidates"]


# ---- deterministic checks --------------------------------------------------------------------


def test_grounding_counts_content_words_and_numbers() -> None:
    share, missing, _ = grounding("Alder Bank was founded in 1987 by Nora Quist.", [ALDER])
    assert share == 1.0 and missing == []
    share, missing, _ = grounding("Alder Bank was founded in 1990 by Olaf.", [ALDER])
    assert missing == ["1990", "olaf"] and share == pytest.approx(3 / 5)
    # inflections match: "branch" / "branches", numbers with separators and currency
    assert (
        grounding("It runs 42 branch offices.", ["The bank runs 42 branches and offices."])[0]
        == 1.0
    )
    assert grounding("It costs £1,500.", ["A bonus of 1500 pounds; it costs."])[0] == 1.0


def test_longest_common_ngram_ignores_case_and_punctuation() -> None:
    assert longest_common_ngram("alder bank was FOUNDED, in 1987?", ALDER) == 6
    assert longest_common_ngram("Who runs Bergen?", ALDER) == 1


def test_a_reference_that_pastes_the_context_is_too_long() -> None:
    pasted = " ".join([ALDER, QUIST, ALDER])
    reasons, _ = deterministic_checks(
        "multi_context",
        "Who founded Alder Bank and who followed?",
        pasted,
        [ALDER, QUIST],
        FilterSettings(),
    )
    assert reasons == ["long_reference"]  # grounded and from both chunks, yet no answer
    reasons, _ = deterministic_checks(
        "multi_context",
        "Who founded Alder Bank and who followed?",
        pasted,
        [ALDER, QUIST],
        FilterSettings(max_reference_words=200),
    )
    assert reasons == []


def test_out_of_scope_is_exempt_from_grounding() -> None:
    reasons, details = deterministic_checks(
        "out_of_scope",
        "What is the bank's mascot?",
        OUT_OF_SCOPE_REFERENCE,
        [ALDER],
        FilterSettings(),
    )
    assert reasons == [] and "grounding" not in details
    reasons, _ = deterministic_checks("single_hop", "Mascot?", "", [ALDER], FilterSettings())
    assert "malformed" in reasons


# ---- determinism, caching, command line -----------------------------------------------------


def _gen_for_all(v: Mapping[str, Any]) -> Any:
    texts = contexts_of(v)
    first = texts[0].split(". ")[0]
    return {
        "question": f"What is known about {first.split()[0]} ({v['style'][:12]}, {len(texts)})?",
        "answer": " ".join(t.split(". ")[0] + "." for t in texts),
    }


ALL_GEN: dict[str, Handler] = {
    f"testset_{t}": _gen_for_all
    for t in ("single_hop", "multi_context", "reasoning", "comparative")
}
ALL_GEN["testset_out_of_scope"] = lambda v: {
    "question": f"Who cleans the offices ({v['style'][:8]})?",
    "missing": "cleaning is not covered",
}
ALL_CRIT: dict[str, Handler] = {
    "testset_critique": critic(),
    "testset_critique_oos": lambda v: {"reason": "-", "answerable": False, "self_contained": True},
}


async def test_same_seed_same_test_set_and_calls_are_cached(corpus: Corpus) -> None:
    settings = TestsetSettings(size=6, seed=7, filter=FilterSettings(min_grounding=0.0))
    cache = MemoryCallCache()
    g1 = judge({**ALL_GEN, **ALL_CRIT}).for_run(cache=cache)
    first = await agenerate(corpus, g1, None, None, settings)
    g2 = judge({**ALL_GEN, **ALL_CRIT}).for_run(cache=cache)
    second = await agenerate(corpus, g2, None, None, settings)
    assert first.rows == second.rows and first.rejected == second.rejected
    assert first.rows
    for row in first.rows:  # the reference contexts are the chunks the ids name
        assert row["reference_contexts"] == [corpus.chunk(i).text for i in row["relevant_ids"]]
    assert g2.stats.calls == 0 and g2.stats.cache_hits == g1.stats.calls
    other = await agenerate(
        corpus,
        judge({**ALL_GEN, **ALL_CRIT}),
        None,
        None,
        TestsetSettings(size=6, seed=8, filter=FilterSettings(min_grounding=0.0)),
    )
    assert other.rows != first.rows


def test_cli_generate_writes_the_test_set_and_the_rejected_sidecar(
    corpus: Corpus,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from ragsight import cli
    from ragsight.cli import _testset as _cli

    handlers = {**ALL_GEN, **ALL_CRIT}
    handlers["testset_critique"] = lambda v: {
        "reason": "-",
        "answerable": "Birch" not in v["contexts"],
        "self_contained": True,
        "copied": False,
    }
    monkeypatch.setattr(_cli, "make_judge", lambda spec, **kw: judge(handlers, spec or "default"))
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, "utf-8")
    out = tmp_path / "ts.jsonl"
    code = cli.main(
        [
            "generate",
            str(docs),
            "--size",
            "5",
            "--out",
            str(out),
            "--embedder",
            "none",
            "--store",
            str(tmp_path / "r.db"),
            "--min-grounding",
            "0",
            "--seed",
            "2",
            "--critic",
            "critic-x",
        ]
    )
    assert code == 0
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    rejected = [
        json.loads(line)
        for line in (tmp_path / "ts.rejected.jsonl").read_text("utf-8").splitlines()
    ]
    assert rows and all(r["metadata"]["testset_critic"] == "scripted:critic-x" for r in rows)
    assert rejected and all(r["reasons"] for r in rejected)
    assert all(BIRCH not in r["reference_contexts"] for r in rows)
    printed = capsys.readouterr().out
    assert f"wrote {len(rows)} question(s)" in printed and "not_answerable" in printed
