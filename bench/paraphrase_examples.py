"""Lexical metrics on three correct answers phrased differently from their references.

    .venv/bin/python bench/paraphrase_examples.py

The three (response, reference) pairs are the paraphrase examples of D. Petrov, "Evaluation
Approaches for Retrieval-Augmented Generation (RAG)" (University of Vienna, 2025), Figure 1, where
ragas scored them BLEU 0.11 / 0.07 / 0.04, ROUGE 0.18 / 0.31 / 0.21 and factual correctness (F1,
an LLM judge) 1.00 / 0.86 / 1.00. This script scores the same pairs with ragsight's lexical
metrics (``ragsight.metrics._lexical``) and prints them beside the thesis's figures; the table is
reproduced in docs/metrics.md.
"""

from __future__ import annotations

from ragsight.metrics import _lexical

# (response, reference), verbatim from the thesis (Figure 1), and its reported scores.
EXAMPLES: list[tuple[str, str]] = [
    ("The capital of France is Paris", "Paris is France's capital"),
    (
        "The two main parts of a Retrieval-Augmented Generation system are: a retriever, which finds "
        "documents related to the query, and a generator, which creates a reference. A RAG system "
        "consists of a retriever that fetches relevant documents and a generator that produces "
        "answers conditioned on the retrieved context.",
        "A RAG system consists of a retriever that fetches relevant documents and a generator that "
        "produces answers conditioned on the retrieved context.",
    ),
    (
        "Industrial emissions and deforestation contribute to climate change",
        "Climate change is caused by greenhouse gases, deforestation, and industrial emissions",
    ),
]
THESIS = [  # (BLEU, ROUGE, factual correctness) as printed by ragas in the thesis
    (0.11, 0.18, 1.00),
    (0.07, 0.31, 0.86),
    (0.04, 0.21, 1.00),
]


def scores(response: str, reference: str) -> dict[str, float]:
    return {
        "exact_match": _lexical.exact_match(response, reference),
        "token_f1": _lexical.token_f1(response, reference),
        "bleu": _lexical.bleu(response, reference),
        "rouge_1": _lexical.rouge_n(response, reference, 1),
        "rouge_2": _lexical.rouge_n(response, reference, 2),
        "rouge_l": _lexical.rouge_l(response, reference),
        "chrf": _lexical.chrf(response, reference),
    }


def main() -> None:
    cols = ["exact_match", "token_f1", "bleu", "rouge_1", "rouge_2", "rouge_l", "chrf"]
    print("| example | " + " | ".join(cols) + " | thesis BLEU | thesis ROUGE | thesis factual correctness |")
    print("|---" * (len(cols) + 4) + "|")
    for i, ((resp, ref), (t_bleu, t_rouge, t_fc)) in enumerate(zip(EXAMPLES, THESIS, strict=True), start=1):
        s = scores(resp, ref)
        cells = " | ".join(f"{s[c]:.2f}" for c in cols)
        print(f"| {i} | {cells} | {t_bleu:.2f} | {t_rouge:.2f} | {t_fc:.2f} |")


if __name__ == "__main__":
    main()
