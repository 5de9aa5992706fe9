"""ragsight sweep with a scripted generator and judge and a deterministic embedder: every
configuration is a paired run, the dry-run counts what the run does, a killed sweep resumes, a
user callable with two parameters is swept from Python and from the command line, and the report
reads the runs."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from ragsight import Store
from ragsight.cli import main
from ragsight.judge import Judge, ScriptedProvider
from ragsight.pipeline import RagPipeline
from ragsight.sweep import (
    asweep,
    build_report,
    load_sweep,
    plan_sweep,
    print_sweep_report,
    render_sweep_html,
    sweep,
)
from ragsight.testset import load_corpus
from tests.fakes.embedder import TableEmbedder

DOCS = {
    "leave.md": "# Leave\n\nFull-time staff receive 25 days of paid annual leave each year. "
    "Up to five unused days may be carried over into the next year and must be used by March. "
    "Parental leave for the primary carer is twenty weeks at full pay. The secondary carer "
    "receives six weeks. Sick leave is paid in full for twenty days a year.\n",
    "travel.md": "# Travel\n\nBusiness class is never booked. Flights up to six hours are economy. "
    "Hotels in London cost at most 150 pounds a night. Trains are taken when the journey is under "
    "four hours. Taxis are allowed late at night or when carrying equipment.\n",
    "security.md": "# Security\n\nPasswords must be at least 16 characters long. Incidents are "
    "reported within one hour. Laptops are encrypted and updated within five working days. "
    "Visitors are registered a day ahead and accompanied at all times.\n",
}
QUESTIONS = [
    ("q1", "How many days of annual leave?", "25 days.", "leave.md", "25 days of paid annual leave"),
    ("q2", "Is business class booked?", "Never.", "travel.md", "Business class is never booked."),
    ("q3", "How long must passwords be?", "At least 16 characters.", "security.md",
     "Passwords must be at least 16 characters long."),
    ("q4", "How long is parental leave?", "Twenty weeks.", "leave.md", "twenty weeks at full pay"),
]


def make_world(tmp_path: Path) -> tuple[Path, Path]:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, "utf-8")
    texts = {d.id: d.text for d in load_corpus(docs).documents}
    rows = []
    for rid, q, ref, doc, ev in QUESTIONS:
        start = texts[doc].index(ev)
        rows.append({"id": rid, "question": q, "reference": ref, "metadata": {
            "question_type": "single_hop", "reference_spans": [{"doc_id": doc, "start": start, "end": start + len(ev)}]}})
    rows.append({"id": "q5", "question": "What is the dress code?", "reference": "The documents do not say.",
                 "metadata": {"question_type": "out_of_scope"}})
    ts = tmp_path / "ts.jsonl"
    ts.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return docs, ts


class Killed(BaseException):
    """Stands for a kill: not an Exception, so nothing catches it as a judge failure."""


def claims_handler(v: Mapping[str, Any]) -> dict:
    return {"claims": [" ".join(v["raw_text"].split()[:4])]}


def verify_handler(v: Mapping[str, Any]) -> dict:
    return {"verdicts": [{"id": i + 1, "supported": True, "chunks": [1], "reason": "scripted"}
                         for i, _ in enumerate(v["claim_list"])]}


def declines_handler(v: Mapping[str, Any]) -> dict:
    return {"reason": "scripted", "declines": "Answer to" not in v.get("response", "")}


def judge_provider(kill_after: int | None = None) -> ScriptedProvider:
    count = {"n": 0}

    def tick() -> None:
        count["n"] += 1
        if kill_after is not None and count["n"] > kill_after:
            raise Killed

    def claims(v: Mapping[str, Any]) -> dict:
        tick()
        return claims_handler(v)

    def verify(v: Mapping[str, Any]) -> dict:
        tick()
        return verify_handler(v)

    return ScriptedProvider({"extract_claims": claims, "verify_claims": verify, "declines_json": declines_handler},
                            model="judge-model")


def generator_provider() -> ScriptedProvider:
    def answer(v: Mapping[str, Any]) -> dict:
        q = re.sub(r"</?question>", "", v["question"]).strip()
        return {"answer": f"Answer to: {q}"}

    def rewrite(v: Mapping[str, Any]) -> dict:
        q = re.sub(r"</?question>", "", v["question"]).strip()
        return {"queries": [f"{q} policy", f"{q} rules"]}

    return ScriptedProvider({"rag_answer": answer, "rag_rewrite": rewrite}, model="gen-model")


def spec_dict(docs: Path, ts: Path, **extra: Any) -> dict[str, Any]:
    return {
        "name": "t", "documents": [str(docs)], "testset": str(ts),
        "fixed": {"chunk_overlap": 0, "fusion_queries": 2, "generator": "gen"},
        "grid": {"chunk_size": [12, 30], "retrieval": ["dense", "fusion"]},
        "baseline": {"chunk_size": 12, "retrieval": "dense"},
        "metrics": ["span_hit_rate", "span_recall", "span_mrr", "span_ndcg", "faithfulness",
                    "abstention(scope=out_of_scope)"],
        "judge_questions": 2, "judge_out_of_scope": 1, **extra,
    }


def pipeline(docs: Path, store: Store, gen: ScriptedProvider, emb: TableEmbedder) -> RagPipeline:
    return RagPipeline(docs, store=store, embedders={"local": emb}, generators={"gen": Judge(gen)})


async def test_every_configuration_is_a_paired_run_and_the_dry_run_counts_it(tmp_path: Path) -> None:
    docs, ts = make_world(tmp_path)
    spec = load_sweep(spec_dict(docs, ts))
    store = Store(tmp_path / "s.db")
    rows = [json.loads(line) for line in ts.read_text().splitlines()]
    plan = plan_sweep(spec, rows, store)
    gen, jp, emb = generator_provider(), judge_provider(), TableEmbedder(dim=12)
    steps: list[str] = []
    orig = RagPipeline.answer

    async def spy(self: RagPipeline, *a: Any, **k: Any) -> Any:
        out = await orig(self, *a, **k)
        steps.extend(out.generator_steps)
        return out

    RagPipeline.answer = spy  # type: ignore[method-assign]
    try:
        result = await asweep(spec, store=store, judge=Judge(jp), embedder=emb,
                              pipeline=pipeline(docs, store, gen, emb))
    finally:
        RagPipeline.answer = orig  # type: ignore[method-assign]
    assert [r.status for r in result.runs] == ["completed"] * 4
    # the dry run: 4 configurations, 5 questions, judged 2 in scope + 1 out of scope
    assert (plan.configurations, plan.to_run, plan.questions, plan.judged) == (4, 4, 5, 3)
    # generator: one rewrite step per question (shared by both fusion configurations through
    # the cache) and one answer step per judged question and configuration
    rewrites = [r for r in gen.requests if r.prompt_id == "rag_rewrite"]
    assert plan.generator_rewrites == len(rewrites) == 5
    assert plan.generator_answers == 4 * 3
    assert len(steps) == plan.generator_rewrites * 2 + plan.generator_answers  # rewrites asked by 2 configs
    assert len(gen.requests) == len(set(steps))  # every distinct step sent once, repeats cached
    assert result.generator_calls == len(gen.requests)
    # judge: 2 steps (claims, verdicts) per judged sample and one abstention step on the
    # out-of-scope one, as the plan says (its answer, "Answer to: ...", is no clean decline, so
    # the phrase detector leaves it to the judge)
    judge_steps = sum(r.result.judge_stats.get("steps", 0) for r in result.runs if r.result)
    assert plan.judge_steps == judge_steps == 4 * (3 * 2 + 1)
    # pairing: the same question ids in every run, tagged with the sweep and configuration
    ids = {tuple(s.id for s in r.result.samples) for r in result.runs if r.result}
    assert ids == {("q1", "q2", "q3", "q4", "q5")}
    infos = {i.id: i for i in store.runs()}
    for r in result.runs:
        meta = infos[r.run_id].metadata
        assert meta["sweep"] == "t" and meta["config_id"] == r.config.id
        assert meta["chunk_size"] == r.config.params["chunk_size"]
    base = result.runs[0].result
    assert base is not None
    scores = base.scores
    assert scores["q1"]["span_recall"].outcome.value == "scored"
    assert scores["q5"]["span_recall"].outcome.value == "skipped"  # out of scope
    assert scores["q3"]["faithfulness"].outcome.value == "skipped"  # not judged
    assert scores["q1"]["faithfulness"].value == 1.0
    # the out-of-scope question is answered and scored for declining (the scripted generator
    # answers everything, so it did not decline: 0); in-scope questions skip it
    assert scores["q5"]["abstention(scope=out_of_scope)"].value == 0.0
    assert scores["q1"]["abstention(scope=out_of_scope)"].outcome.value == "skipped"
    # retrieved chunks carry spans that lie in their documents
    s1 = next(s for s in base.samples if s.id == "q1")
    assert len(s1.metadata["retrieved_spans"]) == 5 and s1.metadata["judged"] is True  # default top_k
    # a second run changes nothing and calls nobody
    n_gen, n_judge = len(gen.requests), len(jp.requests)
    again = await asweep(spec, store=store, judge=Judge(jp), embedder=emb, pipeline=pipeline(docs, store, gen, emb))
    assert [r.status for r in again.runs] == ["reused"] * 4
    assert (len(gen.requests), len(jp.requests)) == (n_gen, n_judge)
    # the runs were made with this judge and embedder: planned with them, nothing is left to run
    assert plan_sweep(spec, rows, store, judge=Judge(jp), embedder=emb).to_run == 0
    # one new configuration pays only for itself
    bigger = load_sweep(spec_dict(docs, ts, grid={"chunk_size": [12, 30, 50], "retrieval": ["dense", "fusion"]}))
    third = await asweep(bigger, store=store, judge=Judge(jp), embedder=emb, pipeline=pipeline(docs, store, gen, emb))
    assert [r.status for r in third.runs].count("completed") == 2
    assert not [r for r in gen.requests[n_gen:] if r.prompt_id == "rag_rewrite"]  # rewrites cached
    store.close()


async def test_a_killed_sweep_resumes_where_it_stopped(tmp_path: Path) -> None:
    docs, ts = make_world(tmp_path)
    spec = load_sweep(spec_dict(docs, ts))
    store = Store(tmp_path / "s.db")
    gen, emb = generator_provider(), TableEmbedder(dim=12)
    # 3 judged samples x 2 steps per configuration: killed during the second configuration
    with pytest.raises(Killed):
        await asweep(spec, store=store, judge=Judge(judge_provider(kill_after=8)), embedder=emb,
                     pipeline=pipeline(docs, store, gen, emb))
    statuses = {i.id: i.status for i in store.runs()}
    assert sorted(statuses.values()) == ["completed", "interrupted"]
    interrupted = next(i for i, s in statuses.items() if s == "interrupted")
    done_before = store.finished_samples(interrupted)
    assert 0 < len(done_before) < 5
    jp = judge_provider()
    result = await asweep(spec, store=store, judge=Judge(jp), embedder=emb, pipeline=pipeline(docs, store, gen, emb))
    assert [r.status for r in result.runs] == ["reused", "completed", "completed", "completed"]
    assert store.finished_samples(interrupted) == {"q1", "q2", "q3", "q4", "q5"}
    # the resumed run asked the judge only for what was not finished: fewer calls than the three
    # unfinished configurations' 3 judged samples x 2 steps
    assert len(jp.requests) < 3 * 3 * 2
    rep = build_report(store, "t")
    assert len(rep.configs) == 4 and all(c.status == "completed" for c in rep.configs)
    store.close()


def my_rag(question: str, top_k: int, style: str) -> dict[str, Any]:
    """A user's pipeline with two parameters: returns top_k chunks of the 'leave' document."""
    text = DOCS["leave.md"]
    chunks = [(0, 60), (60, 140), (140, 230), (230, 320)][:top_k]
    return {"answer": f"{style}: {question}",
            "contexts": [{"id": f"leave#{i}", "text": text[a:b], "doc_id": "leave.md", "start": a - 9 if a else 0,
                          "end": b - 9} for i, (a, b) in enumerate(chunks)]}


def callable_spec(ts: Path) -> dict[str, Any]:
    return {"name": "mine", "testset": str(ts), "pipeline": {"target": "callable"},
            "grid": {"top_k": [1, 3], "style": ["short", "long"]}, "baseline": {"top_k": 1, "style": "short"},
            "metrics": ["span_hit_rate", "span_recall", "span_precision"]}


def test_a_user_callable_with_two_parameters_from_python(tmp_path: Path) -> None:
    _, ts = make_world(tmp_path)
    result = sweep(callable_spec(ts), target=my_rag, store=str(tmp_path / "s.db"))
    assert len(result.runs) == 4 and result.target_calls == 20
    with Store(tmp_path / "s.db") as st:
        rep = build_report(st, "mine")
    by = {(c.params["top_k"], c.params["style"]): c for c in rep.configs}
    # top 3 chunks of 'leave' reach the parental-leave sentence of q4; top 1 does not
    assert by[(3, "short")].means["span_recall"] > by[(1, "short")].means["span_recall"]
    eff = next(e for e in rep.effects if e.parameter == "top_k" and e.metric == "span_recall")
    assert eff.mode == "held at the baseline" and eff.values == (1, 3)
    assert [e for e in rep.effects if e.parameter == "style"]


def test_a_user_callable_from_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    make_world(tmp_path)
    mod = tmp_path / "user_rag.py"
    mod.write_text("from tests.unit.test_sweep import my_rag as answer\n", "utf-8")
    spec = tmp_path / "mine.toml"
    spec.write_text(
        'name = "mine"\ntestset = "ts.jsonl"\nmetrics = ["span_hit_rate", "span_recall"]\n'
        'baseline = {top_k = 1, style = "short"}\n\n[pipeline]\ntarget = "user_rag:answer"\n\n'
        '[grid]\ntop_k = [1, 3]\nstyle = ["short", "long"]\n', "utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert main(["sweep", "mine.toml", "--dry-run", "--store", "s.db"]) == 0
    dry = capsys.readouterr().out
    assert "configurations: 4 (4 to run" in dry and "calls to the system under test: 20" in dry
    assert main(["sweep", "mine.toml", "--store", "s.db", "--report", "mine.html"]) == 0
    printed = capsys.readouterr().out
    assert "Sweep 'mine': 4 configurations, 5 questions each" in printed
    assert max(len(line) for line in printed.splitlines()) <= 80
    assert (tmp_path / "mine.html").read_text().count("<svg") >= 2
    assert main(["sweep", "report", "mine", "--store", "s.db"]) == 0
    assert "Best per metric" in capsys.readouterr().out


async def test_the_report_reads_best_effects_tradeoff_and_findings(tmp_path: Path) -> None:
    docs, ts = make_world(tmp_path)
    store = Store(tmp_path / "s.db")
    gen, emb = generator_provider(), TableEmbedder(dim=12)
    await asweep(load_sweep(spec_dict(docs, ts)), store=store, judge=Judge(judge_provider()), embedder=emb,
                 pipeline=pipeline(docs, store, gen, emb))
    rep = build_report(store)
    assert rep.name == "t" and rep.baseline == 0 and rep.configs[0].baseline
    assert set(rep.varied) == {"chunk_size", "retrieval"}
    assert "faithfulness" in rep.metrics and "span_recall" in rep.metrics
    # comparisons: 3 configurations x metrics against the baseline, Holm-adjusted (never below raw p)
    assert rep.comparisons and all(c.p_holm is None or c.p_holm >= (c.difference.p_value or 0)
                                   for c in rep.comparisons)
    for m, idx in rep.best.items():
        vals = [c.means[m] for c in rep.configs if c.means[m] is not None]
        assert rep.configs[idx[0]].means[m] == pytest.approx(max(vals))
    # effects along the grid's lines through the baseline
    modes = {e.mode for e in rep.effects}
    assert modes == {"held at the baseline"}
    # trade-off: tokens per answered question come from the generator's records
    assert all(c.tokens_per_question and c.tokens_per_question > 0 for c in rep.configs)
    assert rep.pareto and all(0 <= i < 4 for i in rep.pareto)
    assert rep.judged_note.startswith("Judge metrics were computed on 3 of 5 questions")
    # the overall score leaves out what was measured on fewer questions than the span metrics
    assert "faithfulness" not in rep.overall_metrics and "span_recall" in rep.overall_metrics
    assert any("leaves out faithfulness" in n for n in rep.notes)
    console = Console(width=80, record=True)
    print_sweep_report(rep, console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "C1 (base)" in text and "Best overall" in text
    page = render_sweep_html(rep)
    assert "Content-Security-Policy" in page and "<script" not in page
    assert page.count("<svg") == 1 + len(rep.effects)
    store.close()


def test_sweep_definitions_are_checked_with_clear_errors(tmp_path: Path) -> None:
    docs, ts = make_world(tmp_path)
    with pytest.raises(Exception, match="unknown key"):
        load_sweep({**spec_dict(docs, ts), "gird": {}})
    with pytest.raises(Exception, match="top_kk"):
        load_sweep({**spec_dict(docs, ts), "grid": {"top_kk": [1, 2]}})
    with pytest.raises(Exception, match="no configuration matches the baseline"):
        load_sweep({**spec_dict(docs, ts), "baseline": {"chunk_size": 999}})
    with pytest.raises(Exception, match="given twice"):
        load_sweep({**spec_dict(docs, ts), "grid": {}, "configurations": [{"top_k": 2}, {"top_k": 2}]})
    # TOML, YAML and the dict are the same sweep
    (tmp_path / "s.toml").write_text(
        f'name = "t"\ndocuments = ["{docs}"]\ntestset = "{ts}"\n[grid]\nchunk_size = [40, 80]\n', "utf-8")
    (tmp_path / "s.yaml").write_text(
        f"name: t\ndocuments: [{docs}]\ntestset: {ts}\ngrid:\n  chunk_size: [40, 80]\n", "utf-8")
    a, b = load_sweep(tmp_path / "s.toml"), load_sweep(tmp_path / "s.yaml")
    c = load_sweep({"name": "t", "documents": [str(docs)], "testset": str(ts), "grid": {"chunk_size": [40, 80]}})
    assert [x.id for x in a.configurations] == [x.id for x in b.configurations] == [x.id for x in c.configurations]
    assert [x.label for x in a.configurations] == ["chunk_size=40", "chunk_size=80"]


def test_an_http_target_receives_the_configuration_in_its_request_template(tmp_path: Path) -> None:
    from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest, Reply

    _, ts = make_world(tmp_path)
    text = DOCS["leave.md"]

    def handle(req: RecordedRequest) -> Reply:
        body = req.json
        k = body["settings"]["k"]
        assert isinstance(k, int) and body["settings"]["label"] == f"k={k}"
        return Reply.json({"answer": "ok", "contexts": [
            {"id": f"c{i}", "text": text[i * 50:(i + 1) * 50], "doc_id": "leave.md", "start": i * 50,
             "end": (i + 1) * 50} for i in range(k)]})

    with FakeOpenAIServer(handler=handle) as srv:
        spec = {"name": "http", "testset": str(ts), "metrics": ["span_hit_rate", "span_recall"],
                "pipeline": {"target": f"{srv.url}/ask",
                             "request_template": {"q": "{question}", "settings": {"k": "{top_k}", "label": "k={top_k}"}}},
                "grid": {"top_k": [1, 4]}}
        result = sweep(spec, store=str(tmp_path / "s.db"))
        seen = sorted({(r.json["q"], r.json["settings"]["k"]) for r in srv.requests})
    assert result.target_calls == 10 and len(seen) == 10
    assert {k for _, k in seen} == {1, 4}
    with Store(tmp_path / "s.db") as st:
        rep = build_report(st, "http")
    assert [c.params["top_k"] for c in rep.configs] == [1, 4]
    assert rep.configs[1].means["span_recall"] >= rep.configs[0].means["span_recall"]


def test_the_example_dry_run_as_the_docs_show_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--example", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "configurations: 8 (8 to run, 0 already in the store)" in text
    assert "questions: 22 (4 out of scope)" in text
    assert "22 RAG-fusion rewrites, 16 answers" in text
    assert text.count("retrieval=fusion") == 4 and "(baseline)" in text
    assert max(len(line) for line in text.splitlines()) <= 80


async def test_the_report_is_the_same_in_every_process(tmp_path: Path) -> None:
    import os
    import subprocess

    docs, ts = make_world(tmp_path)
    # 40 questions: enough differences that the permutation test samples (more than 16 differ)
    rows = [json.loads(line) for line in ts.read_text().splitlines()][:4]
    many = [{**r, "id": f"{r['id']}-{n}", "question": f"{r['question']} ({n})"} for n in range(10) for r in rows]
    ts.write_text("".join(json.dumps(r) + "\n" for r in many), "utf-8")
    store = Store(tmp_path / "s.db")
    gen, emb = generator_provider(), TableEmbedder(dim=12)
    await asweep(load_sweep(spec_dict(docs, ts, metrics=["span_recall", "span_mrr"])), store=store, embedder=emb,
                 pipeline=pipeline(docs, store, gen, emb))
    store.close()
    root = Path(__file__).resolve().parents[2]
    outs = []
    for seed in ("1", "2"):  # string hashing, hence set order, differs between these processes
        env = {**os.environ, "PYTHONHASHSEED": seed,
               "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root), os.environ.get("PYTHONPATH", "")])}
        code = ("import json, sys; from ragsight import Store; from ragsight.sweep import build_report; "
                "print(json.dumps(build_report(Store(sys.argv[1]), 't').to_dict(), default=str))")
        proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s.db")], capture_output=True,
                              text=True, env=env, check=True)
        outs.append(json.loads(proc.stdout))
    assert outs[0]["effects"] and outs[0] == outs[1]


def test_the_sweep_files_in_the_docs_parse_as_shown(tmp_path: Path) -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "sweep.md").read_text("utf-8")
    specs = []
    for n, block in enumerate(re.findall(r"```toml\n(.*?)```", docs, re.S)):
        path = tmp_path / f"doc{n}.toml"
        path.write_text(block, "utf-8")
        specs.append(load_sweep(path))
    first, thesis = specs[0], next(s for s in specs if s.name == "thesis-table-3")
    assert len(first.configurations) == 8 and first.baseline.params["chunk_size"] == 256
    assert "abstention(scope=out_of_scope)" in first.metrics
    # Table 3: ten experiments, the first the baseline, the seventh RAG-fusion
    assert len(thesis.configurations) == 10 and thesis.baseline_index == 0
    assert [c.params.get("retrieval", "dense") for c in thesis.configurations].count("fusion") == 1
    assert thesis.configurations[6].params["retrieval"] == "fusion"
    assert {c.params["top_k"] for c in thesis.configurations} == {3, 5, 10}
    assert set(thesis.varied) == {"top_k", "chunk_size", "chunk_overlap", "generator", "retrieval"}
