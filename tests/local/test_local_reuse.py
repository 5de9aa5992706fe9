"""Prefix states and prompt-lookup decoding of the embedded judge, on the tiny SmolLM2 model."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragsight.judge import Judge
from ragsight.prompts import fence, load_prompt

pytestmark = [pytest.mark.slow, pytest.mark.local]

TEXT = ("The Larkspur frame warranty lasts ten years from the date of purchase. Batteries are covered "
        "for two years or 800 charge cycles, whichever comes first.")


def test_greedy_decoding_is_llama_cpps_and_drafts_stay_grammatical(smollm_provider: object) -> None:
    from llama_cpp import LlamaGrammar

    prov = smollm_provider
    judge = Judge(prov)  # type: ignore[arg-type]
    req = judge.request(load_prompt("extract_claims"), {"question": "", "text": fence("response", TEXT)},
                        max_tokens=96)
    llm = prov._load()  # type: ignore[attr-defined]
    texts = []
    for lookup in (True, False):
        prov.prompt_lookup = lookup  # type: ignore[attr-defined]
        texts.append(prov._complete_sync(req).text)  # type: ignore[attr-defined]
    prov.prompt_lookup = False  # type: ignore[attr-defined]  # the default
    tokens = llm.tokenize(prov.render(req.messages).encode(), add_bos=True, special=True)  # type: ignore[attr-defined]
    llm.reset()
    ref = llm.create_completion(prompt=tokens, max_tokens=96, temperature=0.0, top_k=1, seed=0,
                                stop=["<|im_end|>", "<|endoftext|>"],
                                grammar=LlamaGrammar.from_json_schema(json.dumps(req.schema), verbose=False))
    # The default path (no drafts) is exactly llama.cpp's own greedy decoding under the grammar.
    assert texts[1] == ref["choices"][0]["text"]
    # Drafts are checked in batches, whose logits can differ from one-token passes in the last bits
    # (seen with AVX-512 builds), so the greedy path may diverge: it must still be grammatical.
    assert isinstance(json.loads(texts[0])["claims"], list)


async def test_a_saved_prefix_is_restored_after_another_prompt(smollm_provider: object) -> None:
    prov = smollm_provider
    judge = Judge(prov)  # type: ignore[arg-type]
    prompt = load_prompt("verify_claim")
    source = fence("context", TEXT * 3, n=1)
    await judge.choose(prompt, {"source": source, "claim": fence("claim", "The warranty lasts ten years.")},
                       use_cache=False)
    await judge.choose(prompt, {"source": fence("context", "Unrelated text about trains. " * 20, n=1),
                                "claim": fence("claim", "Trains exist.")}, use_cache=False)
    before = prov.tokens_evaluated  # type: ignore[attr-defined]
    await judge.choose(prompt, {"source": source, "claim": fence("claim", "Batteries are covered.")},
                       use_cache=False)
    # only the claim and the closing ask are evaluated: the contexts come back from a saved state
    assert prov.tokens_evaluated - before < 40  # type: ignore[attr-defined]


class _GivesUpAfter:
    """A cancel event that reads as set from its n-th look on (the generation looks once a token)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def is_set(self) -> bool:
        self.n -= 1
        return self.n < 0


@pytest.mark.parametrize("lookup", [False, True])
def test_a_generation_given_up_on_goes_on_when_asked_again(smollm_provider: object, lookup: bool) -> None:
    from ragsight.judge import ProviderError

    prov: Any = smollm_provider
    prov.prompt_lookup = lookup
    judge = Judge(prov)
    req = judge.request(load_prompt("extract_claims"), {"question": "", "text": fence("response", TEXT)},
                        max_tokens=96)
    other = judge.request(load_prompt("extract_claims"), {"question": "", "text": fence("response", TEXT[:60])},
                          max_tokens=96)
    try:
        whole = prov._complete_sync(req)
        passes = prov.decode_passes
        prov._complete_sync(req)
        passes_whole = prov.decode_passes - passes
        passes = prov.decode_passes
        with pytest.raises(ProviderError, match="abandoned"):
            prov._complete_sync(req, _GivesUpAfter(8))  # a time-out, a few tokens in
        passes_given_up = prov.decode_passes - passes
        prov._complete_sync(other)  # another call takes the model before the retry
        passes, resumed = prov.decode_passes, prov.generations_resumed
        again = prov._complete_sync(req)
    finally:
        prov.prompt_lookup = False
    assert prov.generations_resumed == resumed + 1
    assert again == whole  # text, token counts and finish reason
    # the retry makes only the passes the abandoned call had not made
    assert 0 < passes_given_up < passes_whole
    assert prov.decode_passes - passes == passes_whole - passes_given_up


def test_a_run_keeps_the_speeds_it_measured_for_the_dry_run(smollm_provider: object, tmp_path: Any,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from ragsight.judge import _estimate, _model_files

    prov: Any = smollm_provider
    judge = Judge(prov)
    prov._load()  # before the cache directory moves
    monkeypatch.setattr(_model_files, "default_cache_dir", lambda: tmp_path)
    before = (prov.tokens_timed_prompt, prov.tokens_timed_generated)
    for i in range(40):  # until the run has done enough to be measured
        if (prov.tokens_timed_prompt - before[0] >= _estimate.MIN_MEASURED_PROMPT
                and prov.tokens_timed_generated - before[1] >= _estimate.MIN_MEASURED_GENERATED):
            break
        text = f"Model {i} of the Larkspur range. " + TEXT
        req = judge.request(load_prompt("extract_claims"), {"question": "", "text": fence("response", text)},
                            max_tokens=96)
        prov._complete_sync(req)
    assert prov.tokens_timed_prompt - before[0] > 0 and prov.tokens_timed_generated - before[1] > 0
    asyncio.run(prov.aclose())
    speed = _estimate.read_local_speed(prov.model, prov.n_threads)
    assert speed.measured_at is not None
    assert speed.prompt_per_s == pytest.approx(prov.tokens_timed_prompt / prov.seconds_prompt, rel=0.01)
    assert speed.generated_per_s == pytest.approx(prov.tokens_timed_generated / prov.seconds_generating, rel=0.01)
