"""Scenarios from documents, for ``ragsight simulate``: goals a user of the documents would have.

Two kinds, asked for with ``ragsight generate --types``:

- ``scenario``: one chunk; a user whose goal needs two facts of it (so that a simulated user asks
  for one, then the other), with a persona, a first message in the drawn style and the expected
  outcome stated with the chunk's facts. Checked like a question: the first message must not
  copy the chunk and must be about the goal (``off_topic``: it shares no content word with the
  scenario and its outcome), the expected outcome must be grounded in the chunk, and the critic
  must find the goal met by the chunk (``testset_critique``, the scenario read as the question).
- ``scenario_out_of_scope``: one chunk as the topic; a goal the documents do not meet. Its
  expected outcome is a decline: the assistant says the documents do not give it. The critic
  reads the chunks of the corpus most related to the scenario and rejects one they meet
  (``testset_critique_oos``).

A scenario row holds ``id``, ``scenario``, ``persona``, ``first_message``, ``expected_outcome``
and ``metadata`` (question type, style, source chunks, the generator and critic, what is
missing for an out-of-scope one). Scenario kinds are not mixed with question kinds in one file:
``ragsight answer`` reads questions, ``ragsight simulate`` scenarios.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import ConfigError, OutputError
from ..judge import Judge, JudgeFailedError
from ..prompts import load_prompt
from ._chunk import Chunk
from ._filter import (
    FilterSettings,
    content_tokens,
    critique,
    deterministic_checks,
    longest_common_ngram,
    numbered,
)

__all__ = [
    "SCENARIO_TYPES",
    "Candidate",
    "ScenarioDraft",
    "check_mix",
    "scenario_candidate",
    "scenario_row",
    "validate_scenario",
]

SCENARIO_TYPES = ("scenario", "scenario_out_of_scope")
MIN_SCENARIO_WORDS = 5


class _Spec(Protocol):
    @property
    def question_type(self) -> str: ...

    @property
    def chunk_ids(self) -> tuple[str, ...]: ...


class Candidate(Protocol):
    """What the generation driver keeps of one candidate (its ``_Outcome``)."""

    @property
    def spec(self) -> _Spec: ...

    question: str
    reference: str
    contexts: tuple[Chunk, ...]
    reasons: list[str]
    details: dict[str, Any]
    prompts: dict[str, str]


@dataclass(frozen=True)
class ScenarioDraft:
    """The generator's scenario, checked: every field one line of text."""

    scenario: str
    persona: str
    first_message: str
    expected_outcome: str
    missing: str = ""


def _field(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise OutputError(f'"{key}" must be a non-empty string')
    return " ".join(value.split())


def validate_scenario(data: dict[str, Any]) -> ScenarioDraft:
    """The generator's JSON object; raises OutputError saying what is wrong."""
    missing = _field(data, "missing") if "missing" in data else ""
    return ScenarioDraft(_field(data, "scenario"), _field(data, "persona"), _field(data, "first_message"),
                         _field(data, "expected_outcome"), missing)


def check_mix(types: Mapping[str, float]) -> None:
    """Refuse a type mix that puts scenarios and questions in one file."""
    scenarios = [t for t, w in types.items() if w > 0 and t in SCENARIO_TYPES]
    questions = [t for t, w in types.items() if w > 0 and t not in SCENARIO_TYPES]
    if scenarios and questions:
        raise ConfigError(
            f"--types: {', '.join(scenarios)} write scenarios for 'ragsight simulate', {', '.join(questions)} "
            "questions for 'ragsight answer'; generate them in two runs (e.g. --types "
            "scenario=0.8,scenario_out_of_scope=0.2, then the questions)")


async def scenario_candidate(
    out: Candidate,
    chunks: Sequence[Chunk],
    generator: Judge,
    critic: Judge,
    style: str,
    settings: FilterSettings,
    related: Callable[[str], Sequence[Chunk]],
) -> None:
    """Generate and check one scenario candidate into ``out`` (its ``reasons`` say why it is
    rejected). ``style`` is the first message's style; ``related(text)`` gives the chunks of the
    corpus most related to a text (what the out-of-scope critic reads)."""
    kind = out.spec.question_type
    oos = kind == "scenario_out_of_scope"
    prompt = load_prompt(f"testset_{kind}")
    out.prompts[prompt.id] = prompt.version
    texts = [c.text for c in chunks]
    try:
        answer = await generator.ask(prompt, {"contexts": numbered(texts), "style": style}, validate_scenario,
                                     max_tokens=480)
    except JudgeFailedError as exc:
        out.reasons.append("generation_failed")
        out.details["error"] = str(exc)
        return
    d = answer.value
    out.question, out.reference = d.scenario, d.expected_outcome
    out.details.update({"persona": d.persona, "first_message": d.first_message})
    if oos:
        out.details["missing"] = d.missing
        # the outcome is a decline: only the first message's form and copying are checked here
        reasons, details = deterministic_checks("out_of_scope", d.first_message, d.expected_outcome, texts, settings)
    else:
        out.contexts = tuple(chunks)
        reasons, details = deterministic_checks("single_hop", d.first_message, d.expected_outcome, texts, settings)
    out.details.update(details)
    if len(d.scenario.split()) < MIN_SCENARIO_WORDS:
        reasons.append("malformed")
    if not set(content_tokens(d.first_message)) & set(content_tokens(f"{d.scenario} {d.expected_outcome}")):
        reasons.append("off_topic")  # the small generator pastes the style's example as the message
    copied = max((longest_common_ngram(d.scenario, t) for t in texts), default=0)
    if copied >= settings.max_copied_ngram and "copied" not in reasons:
        reasons.append("copied")
    if reasons:
        out.reasons.extend(dict.fromkeys(reasons))
        return
    if oos:
        shown = related(d.scenario)
        out.details["critic_chunks"] = [c.id for c in shown]
        found, verdict, _ = await critique(critic, "out_of_scope", d.scenario, "", [c.text for c in shown])
        out.prompts["testset_critique_oos"] = load_prompt("testset_critique_oos").version
    else:
        found, verdict, _ = await critique(critic, "single_hop", d.scenario, d.expected_outcome, texts)
        out.prompts["testset_critique"] = load_prompt("testset_critique").version
    if verdict is not None:
        out.details["critic_reason"] = verdict.reason
    out.reasons.extend(found)


def scenario_row(o: Candidate, meta: dict[str, Any]) -> dict[str, Any]:
    """The accepted scenario as a row of ``ragsight simulate``'s input, with ``meta``."""
    basis = "\x1f".join([o.spec.question_type, o.question, *o.spec.chunk_ids])
    return {
        "id": "sc-" + hashlib.sha256(basis.encode()).hexdigest()[:10],
        "scenario": o.question,
        "persona": o.details.get("persona"),
        "first_message": o.details.get("first_message"),
        "expected_outcome": o.reference,
        "metadata": meta,
    }
