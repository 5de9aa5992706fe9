"""A scripted RAG judge for unit tests: a small world of claims and verdicts written by hand.

``RagScript`` maps texts to the claims they decompose into, and (claim, target-kind) pairs to
verdicts, so a test states exactly what the judge "believes" and checks the arithmetic and the
evidence. Anything not in the script raises, so a test cannot pass on an accidental answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragsight.judge import ScriptedProvider


@dataclass
class RagScript:
    claims: dict[str, list[str]] = field(default_factory=dict)  # text -> claims
    # the sentences asked about (joined by new lines) -> their claims (extract_claims_part)
    parts: dict[str, list[str]] = field(default_factory=dict)
    # text -> claims when asked again about claims not found in it (extract_claims_recheck)
    recheck: dict[str, list[str]] = field(default_factory=dict)
    # (claim, target) -> supported; target is "contexts", "reference", "response" or "chunk:N"
    verdicts: dict[tuple[str, str], bool] = field(default_factory=dict)
    chunk_relevance: dict[str, list[bool]] = field(default_factory=dict)  # question -> per rank
    # chunk text -> P(Yes) of the embedded judge (and relevant at >= 0.5 for the JSON judge),
    # whatever the chunk's rank or neighbours
    chunk_probabilities: dict[str, float] = field(default_factory=dict)
    questions: dict[str, tuple[list[str], bool]] = field(default_factory=dict)  # response -> (qs, noncommittal)
    entities: dict[str, list[str]] = field(default_factory=dict)  # raw text -> entities
    sentence_relevance: Callable[[str], bool] | None = None
    probabilities: dict[tuple[str, str], float] = field(default_factory=dict)
    # (claim, chunk text) -> P(Yes) of the embedded judge for a claim against one chunk alone
    # (context_precision through the reference's claims); without it, the chunk's entry in
    # chunk_probabilities answers for every claim
    claim_in_chunk: dict[tuple[str, str], float] = field(default_factory=dict)
    # (question as judged, response) -> P(Yes) of the embedded judge that the response responds
    # to the question (answer_relevancy with a judge that gives probabilities)
    addresses: dict[tuple[str, str], float] = field(default_factory=dict)

    def _verdict(self, claim: str, target: str) -> bool:
        try:
            return self.verdicts[(claim, target)]
        except KeyError:
            raise AssertionError(f"script has no verdict for {claim!r} against {target}") from None

    def handlers(self) -> dict[str, Callable[[Mapping[str, Any]], Any]]:
        def extract_claims(v: Mapping[str, Any]) -> Any:
            text = v["raw_text"]
            if text not in self.claims:
                raise AssertionError(f"script has no claims for {text!r}")
            return {"claims": self.claims[text]}

        def extract_claims_recheck(v: Mapping[str, Any]) -> Any:
            text = v["raw_text"]
            if text not in self.recheck:
                raise AssertionError(f"script has no re-asked claims for {text!r}")
            return {"claims": self.recheck[text]}

        def extract_claims_part(v: Mapping[str, Any]) -> Any:
            asked = v["raw_sentences"]
            if asked in self.parts:
                return {"claims": self.parts[asked]}
            # asked about every sentence of a text: the text's own claims (a reference of
            # sentences that each need splitting is split as a whole text is)
            if " ".join(asked.split()) == " ".join(v["raw_text"].split()) and v["raw_text"] in self.claims:
                return {"claims": self.claims[v["raw_text"]]}
            raise AssertionError(f"script has no claims for the sentences {asked!r}")

        def verify_claims(v: Mapping[str, Any]) -> Any:
            target = v["target"]
            out = []
            for i, c in enumerate(v["claim_list"], start=1):
                chunks = [k for k in range(1, 10) if self.verdicts.get((c, f"chunk:{k}"), False)]
                out.append({"id": i, "supported": self._verdict(c, target), "chunks": chunks,
                            "reason": f"scripted verdict for claim {i}"})
            return {"verdicts": out}

        def chunk_relevance(v: Mapping[str, Any]) -> Any:
            # the chunks come in the order shown to the judge; "chunk_ranks" are their ranks
            key = v["question"]
            shown = list(zip(v["chunk_ranks"], v["chunk_list"]))
            for q, flags in self.chunk_relevance.items():
                if q in key:
                    return {"verdicts": [{"id": i + 1, "relevant": flags[rank - 1], "reason": f"scripted {rank}"}
                                         for i, (rank, _) in enumerate(shown)]}
            if shown and all(c in self.chunk_probabilities for _, c in shown):
                return {"verdicts": [{"id": i + 1, "relevant": self.chunk_probabilities[c] >= 0.5,
                                      "reason": f"scripted: {c}"} for i, (_, c) in enumerate(shown)]}
            raise AssertionError(f"script has no chunk relevance for {key!r}")

        def generate_questions(v: Mapping[str, Any]) -> Any:
            qs, nc = self.questions[v["response_text"]]
            return {"noncommittal": nc, "questions": qs}

        def extract_entities(v: Mapping[str, Any]) -> Any:
            return {"entities": self.entities[v["raw_text"]]}

        def label_sentences(v: Mapping[str, Any]) -> Any:
            assert self.sentence_relevance is not None
            return {"verdicts": [{"id": i + 1, "relevant": self.sentence_relevance(s)}
                                 for i, s in enumerate(v["sentence_list"])]}

        return {
            "extract_claims": extract_claims,
            "extract_claims_recheck": extract_claims_recheck,
            "extract_claims_part": extract_claims_part,
            "verify_claims": verify_claims,
            "chunk_relevance": chunk_relevance,
            "generate_questions": generate_questions,
            "extract_entities": extract_entities,
            "label_sentences": label_sentences,
        }

    def judge(self) -> ScriptedProvider:
        return ScriptedProvider(self.handlers())

    def choice_judge(self) -> ScriptedProvider:
        """The same world, answered like the embedded judge: one yes/no probability per claim."""

        def verify_claim(v: Mapping[str, Any]) -> float:
            claim = v["claim_text"]
            target = v["target"]
            if target == "chunk":  # one chunk alone, whatever its rank
                chunk = v["chunk_text"]
                if (claim, chunk) in self.claim_in_chunk:
                    return self.claim_in_chunk[(claim, chunk)]
                if chunk in self.chunk_probabilities:
                    return self.chunk_probabilities[chunk]
                raise AssertionError(f"script has no verdict for {claim!r} against the chunk {chunk!r}")
            if target.startswith("chunk:") and (claim, target) not in self.verdicts:
                return 0.1
            if (claim, target) in self.probabilities:
                return self.probabilities[(claim, target)]
            return 0.9 if self._verdict(claim, target) else 0.1

        def chunk_relevant(v: Mapping[str, Any]) -> float:
            chunk = v["chunk_text"]
            if chunk not in self.chunk_probabilities:
                raise AssertionError(f"script has no chunk probability for {chunk!r}")
            return self.chunk_probabilities[chunk]

        def answer_addresses(v: Mapping[str, Any]) -> float:
            key = (v["question_text"], v["response_text"])
            if key not in self.addresses:
                raise AssertionError(f"script has no answer_addresses verdict for {key!r}")
            return self.addresses[key]

        handlers = self.handlers()
        handlers["explain_verdict"] = lambda v: {"reason": "scripted reason"}
        handlers["answer_addresses"] = lambda v: {"reason": f"scripted: {v['verdict']}"}
        handlers["explain_chunk"] = lambda v: {"reason": f"scripted: {v['chunk_text']} is {v['verdict']}"}
        return ScriptedProvider(handlers, choice_handlers={"verify_claim": verify_claim,
                                                           "chunk_relevant": chunk_relevant,
                                                           "answer_addresses_choice": answer_addresses})
