"""The simulated user: the judge model lists what the user wants, writes each user message, and
after each answer reads the conversation from the user's side; a fixed rule (:func:`decide`)
then says whether the goal is met, the user gives up, or the conversation goes on.

The judge steps, each a versioned prompt:

- ``simulate_needs``, once per scenario: what the user wants, as one to four short items
  (``{"needs": [...]}``). A scenario's ``stop_when`` is its one item instead.
- ``simulate_user``: the next message (``{"message"}``), told which items are still missing.
- the reading after an answer: for the embedded judge, one yes/no question per item read from its
  next-token probabilities (``simulate_goal_choice``: does the text of the assistant's messages
  say it?), and, when the
  decline detector (``analyses.detect_declines``) finds a decline beside other content or cannot
  read the language, whether the last answer declined (``simulate_declined_choice``); a plain
  decline, or none, is read from the text. A remote judge gives one JSON verdict
  (``simulate_decide``: ``{"reason", "given": [one per item], "declined"}``). Asked for the whole
  goal at once, the small model called half an answer a met goal; asked of each item against the
  assistant's words alone, it told given from missing on twelve hand-made cases (P(Yes) 0.53-0.84
  given, 0.15-0.45 missing), where the same question over the whole conversation did not.

JSON answers are short and constrained by their schema (a grammar for the embedded judge). The
prompts share their system message, and most start with the scenario and the conversation, so
the embedded judge reuses that prefix from one step to the next. The scenario,
the items, the persona, the stop condition and every message are fenced: the assistant's answers
are data, and the system message tells the judge to ignore instructions in them.

The reading looks at what the user wants, never at the expected outcome: the expected outcome is
what the evaluation checks, and a user whose goal the documents cannot meet must not count as
served because the assistant declined, as it should.

The user writes in the scenario's language (:func:`scenario_language`). A message that is empty,
longer than :data:`MAX_MESSAGE_WORDS` words, offering help, stating a number (of two digits or
more) that neither the scenario nor the conversation holds (a small model playing the user slips
into the assistant's part), or in another language is sent back to the judge with the reason (the
Judge asks again, at most ``RetryPolicy.max_reasks`` times). A message the user sent before is
asked for once more, told to say it in other words; the same again is sent (people repeat
themselves too).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..analyses import STOP_WORDS, detect_declines, language, number_form, tokens
from ..calls import fit_for_judge
from ..errors import OutputError
from ..judge import Answer, Judge, JudgeFailedError
from ..prompts import fence, load_prompt, neutralise
from ._scenario import Scenario

__all__ = [
    "LANGUAGE_NAMES",
    "MAX_MESSAGE_CHARS",
    "MAX_NEEDS",
    "PROMPTS",
    "STATUSES",
    "SUPPORT",
    "Decision",
    "Reading",
    "SimulatedUser",
    "conversation_block",
    "decide",
    "scenario_language",
]

STATUSES = ("goal_met", "gave_up", "continue")
PROMPTS = ("simulate_needs", "simulate_user", "simulate_decide", "simulate_goal_choice",
           "simulate_declined_choice")
SUPPORT = 0.5  # the embedded judge's P(Yes) at or above which a yes/no question reads Yes
MAX_NEEDS = 4
MAX_NEED_WORDS = 30
LANGUAGE_NAMES = {"en": "English", "de": "German", "fr": "French", "es": "Spanish", "pt": "Portuguese",
                  "it": "Italian", "nl": "Dutch", "zh": "Chinese", "ja": "Japanese"}
MAX_MESSAGE_CHARS = 800  # each message of the conversation shown to the judge is cut to this
MESSAGE_TOKENS = 160  # the reply's max_tokens: one or two sentences in JSON
MAX_MESSAGE_WORDS = 60
NEEDS_TOKENS = 160
DECISION_TOKENS = 160
# what an assistant says, not its user (a small model playing the user slips into its usual part)
_HELPING = re.compile(r"\b(?:(?:happy|glad) to (?:help|assist)|i can help|how (?:can|may) i (?:help|assist)|"
                      r"let me know if|feel free to (?:ask|contact))\b", re.IGNORECASE)
_LABEL = re.compile(r"^\s*(?:\*\*)?(?:user|you|me|human|message)\s*(?:\*\*)?\s*:\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Reading:
    """The judge's reading of the conversation after an answer, from the user's side: per item
    the user wants, whether the assistant has given it (and the embedded judge's P(Yes)); whether
    the latest answer declines; why (a remote judge's sentence, or what the detector matched);
    the calls behind it."""

    given: tuple[bool, ...]
    declined: bool
    reason: str = ""
    probabilities: tuple[float | None, ...] = ()
    calls: tuple[Any, ...] = ()

    @property
    def met(self) -> bool:
        return bool(self.given) and all(self.given)


@dataclass(frozen=True)
class Decision:
    """What the user does after an answer: ``status`` one of :data:`STATUSES`, and why."""

    status: str
    reason: str


def scenario_language(sc: Scenario) -> str:
    """The language the simulated user writes in: that of the first message when the scenario
    gives one, else that of the scenario (``analyses.language``: English when it cannot tell)."""
    return language(" ".join(t for t in (sc.first_message, sc.scenario, sc.persona) if t))


def _line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 1] + "…"


def conversation_block(turns: Sequence[Mapping[str, Any]]) -> str:
    """The conversation as the simulated user sees it: one numbered line per message, the user's
    marked "you", each cut at :data:`MAX_MESSAGE_CHARS` characters, fenced."""
    lines = []
    for n, t in enumerate(turns, start=1):
        who = "you (user)" if t.get("role") == "user" else "assistant"
        lines.append(f"[{n}] {who}: {_line(str(t.get('content') or ''))}")
    return fence("conversation", "\n".join(lines) if lines else "(no message yet)")


def _numbered(needs: Sequence[str]) -> str:
    return fence("data", "\n".join(f"{i}. {n}" for i, n in enumerate(needs, start=1)), name="what_you_want")


def _drifted(message: str, lang: str) -> str | None:
    """The language ``message`` is evidently written in when it is not ``lang``, else None. A
    short message whose language cannot be told passes."""
    got = language(message)
    if got == lang:
        return None
    if got != "en":
        return got
    # "en" is also the answer for text it cannot place: English only when it shows
    return "en" if sum(1 for t in tokens(message) if t.lower() in STOP_WORDS) >= 3 else None


def _numbers(text: str) -> set[str]:
    """The numbers of two digits or more (one digit is as often a count the user owns, "my 2
    children", as a fact)."""
    return {n for n in (number_form(t) for t in tokens(text) if t[:1].isdigit()) if len(n.replace(".", "")) >= 2}


def _latest_answer(turns: Sequence[Mapping[str, Any]]) -> str:
    return next((str(t.get("content") or "") for t in reversed(turns) if t.get("role") == "assistant"), "")


class SimulatedUser:
    """The judge steps of one simulated user. ``writer`` writes the messages (it may sample, at
    its temperature and seed); ``decider`` lists the needs and reads the answers (greedy)."""

    def __init__(self, writer: Judge, decider: Judge) -> None:
        self.writer = writer
        self.decider = decider

    def _shared(self, judge: Judge, sc: Scenario, turns: Sequence[Mapping[str, Any]], alongside: Sequence[str],
                output_tokens: int) -> dict[str, Any]:
        scenario = fence("data", sc.scenario, name="scenario")
        conversation = fit_for_judge(judge, [conversation_block(turns)], field="conversation",
                                     output_tokens=output_tokens, alongside=[scenario, *alongside])[0]
        # besides the rendered texts, the plain values, for scripted judges and records
        return {"scenario": scenario, "conversation": conversation, "scenario_id": sc.id,
                "scenario_text": sc.scenario, "user_number": sum(1 for t in turns if t.get("role") == "user"),
                "turn_list": [dict(t) for t in turns]}

    async def needs(self, sc: Scenario, lang: str) -> tuple[tuple[str, ...], tuple[Any, ...]]:
        """What the user wants, item by item (``stop_when`` as the one item when given), and the
        calls behind it."""
        if sc.stop_when:
            return (sc.stop_when,), ()
        values = {"scenario": fence("data", sc.scenario, name="scenario"),
                  "language": LANGUAGE_NAMES.get(lang, "English"), "scenario_id": sc.id,
                  "scenario_text": sc.scenario}

        def validate(d: dict[str, Any]) -> tuple[str, ...]:
            items = d.get("needs")
            if not isinstance(items, list) or not items:
                raise OutputError('"needs" must be a list of one to four short items')
            out = tuple(dict.fromkeys(" ".join(str(i).split()) for i in items if isinstance(i, str) and i.strip()))
            if not out or len(out) > MAX_NEEDS:
                raise OutputError(f'"needs" must hold one to {MAX_NEEDS} non-empty items')
            if any(len(i.split()) > MAX_NEED_WORDS for i in out):
                raise OutputError(f"each item must be short: at most {MAX_NEED_WORDS} words")
            return out

        ans = await self.decider.ask(load_prompt("simulate_needs"), values, validate, max_tokens=NEEDS_TOKENS)
        return ans.value, ans.calls

    async def write(self, sc: Scenario, turns: Sequence[Mapping[str, Any]], lang: str,
                    missing: Sequence[str]) -> Answer[str]:
        """The user's next message, in ``lang``, after ``turns`` (the messages so far), asking for
        what is ``missing``."""
        number = sum(1 for t in turns if t.get("role") == "user") + 1
        persona = ("How the user writes: " + fence("data", sc.persona, name="persona") if sc.persona
                   else "How the user writes: plainly, as a typical user of this assistant.")
        wanted = "What the user still wants:\n" + _numbered(missing) if missing else ""
        task = ("Write the first message the user types to the assistant, asking for what the user wants."
                if number == 1 else "Write the message the user types next, asking the assistant for the first "
                                    "item the user still wants.")
        name = LANGUAGE_NAMES.get(lang, "English")
        known = _numbers(" ".join([sc.scenario, sc.persona or "", sc.first_message or "",
                                   *(str(t.get("content") or "") for t in turns)]))
        values = {**self._shared(self.writer, sc, turns, [persona, wanted, task], MESSAGE_TOKENS),
                  "persona": persona, "missing": wanted, "task": task, "language": name,
                  "missing_list": list(missing), "user_number": number}

        def validate(d: dict[str, Any]) -> str:
            msg = d.get("message")
            if not isinstance(msg, str) or not msg.strip():
                raise OutputError('"message" must be the user\'s message, non-empty text')
            text = _LABEL.sub("", " ".join(msg.split())).strip().strip('"').strip()
            if not text:
                raise OutputError('"message" holds only a label; write the message itself')
            if len(text.split()) > MAX_MESSAGE_WORDS:
                raise OutputError(f"the message has {len(text.split())} words; a user writes one or two short "
                                  "sentences: ask for what you still want, nothing else")
            if _HELPING.search(text):
                raise OutputError("the message offers help as an assistant would; you are the user: ask the "
                                  "assistant for what you still want")
            made_up = sorted(_numbers(text) - known)
            if made_up:
                raise OutputError(f"the message states {', '.join(made_up)}, which neither the scenario nor the "
                                  "assistant said: you are the user, ask for it, never state it")
            drift = _drifted(text, lang)
            if drift is not None:
                raise OutputError(f"the message is in {LANGUAGE_NAMES.get(drift, drift)}; the user writes in "
                                  f"{name}: write it in {name}")
            return text

        prompt = load_prompt("simulate_user")
        ans = await self.writer.ask(prompt, values, validate, max_tokens=MESSAGE_TOKENS)
        sent = {" ".join(str(t.get("content") or "").split()).lower() for t in turns if t.get("role") == "user"}
        if ans.value.lower() not in sent:
            return ans
        # once more, told so (a request of its own, cached as such): a user asked twice in one way
        # rephrases; written the same again, the message is sent (people repeat themselves too)
        values["task"] = (f"{task} The user already sent the message {fence('data', ans.value, name='sent')} "
                          "and did not get what they want: write it in other words.")
        try:
            again = await self.writer.ask(prompt, values, validate, max_tokens=MESSAGE_TOKENS)
        except JudgeFailedError:
            return ans
        return again if again.value.lower() not in sent else ans

    async def read(self, sc: Scenario, turns: Sequence[Mapping[str, Any]], needs: Sequence[str]) -> Reading:
        """The judge's reading after the assistant's latest answer (see :class:`Reading`)."""
        latest = _latest_answer(turns)
        block = _numbered(needs)
        values = {**self._shared(self.decider, sc, turns, [block], DECISION_TOKENS), "needs": block,
                  "need_list": list(needs)}
        if self.decider.supports_choices:
            return await self._read_by_choices(values, latest, needs)

        def validate(d: dict[str, Any]) -> tuple[tuple[bool, ...], bool, str]:
            given = d.get("given")
            if not isinstance(given, list) or len(given) != len(needs) or not all(isinstance(g, bool) for g in given):
                raise OutputError(f'"given" must hold {len(needs)} true or false, one per numbered item')
            declined, reason = d.get("declined"), d.get("reason")
            if not isinstance(declined, bool):
                raise OutputError('"declined" must be true or false')
            if not isinstance(reason, str):
                raise OutputError('"reason" must be one short sentence')
            return tuple(given), declined, " ".join(reason.split())

        ans = await self.decider.ask(load_prompt("simulate_decide"), values, validate, count=len(needs),
                                     max_tokens=DECISION_TOKENS)
        given, declined, reason = ans.value
        declined = declined or detect_declines(latest).verdict == "declines"  # a plain decline, whatever was read
        return Reading(given, declined, reason, tuple(None for _ in given), ans.calls)

    async def _read_by_choices(self, values: dict[str, Any], latest: str, needs: Sequence[str]) -> Reading:
        given: list[bool] = []
        probs: list[float | None] = []
        calls: list[Any] = []
        said = [str(t.get("content") or "") for t in values["turn_list"] if t.get("role") == "assistant"]
        answers = fit_for_judge(self.decider, [fence("context", " ".join(" ".join(a.split()) for a in said))],
                                field="answers", output_tokens=1, alongside=list(needs))[0]
        for need in needs:
            ans = await self.decider.choose(load_prompt("simulate_goal_choice"),
                                            {**values, "answers": answers, "need": neutralise(need), "need_text": need})
            p = ans.value["Yes"]
            given.append(p >= SUPPORT)
            probs.append(round(p, 4))
            calls.extend(ans.calls)
        shown = "; ".join(f"{'given' if g else 'missing'}: {n} (P {p:.2f})" for n, g, p in zip(needs, given, probs)
                          if p is not None)
        if all(given):
            return Reading(tuple(given), False, shown, tuple(probs), tuple(calls))
        signals = detect_declines(latest)
        if signals.verdict in ("declines", "none", "empty"):
            declined = signals.verdict == "declines"
            note = f"; the answer declines ({signals.quoted()})" if declined else ""
            return Reading(tuple(given), declined, shown + note, tuple(probs), tuple(calls))
        ans = await self.decider.choose(load_prompt("simulate_declined_choice"), values)
        p_no = ans.value["Yes"]
        calls.extend(ans.calls)
        return Reading(tuple(given), p_no >= SUPPORT, f"{shown}; P(declined) {p_no:.2f}", tuple(probs), tuple(calls))


def _answers(turns: Sequence[Mapping[str, Any]]) -> list[str]:
    return [" ".join(str(t.get("content") or "").split()).lower() for t in turns if t.get("role") == "assistant"]


def decide(reading: Reading, earlier: Sequence[Reading], turns: Sequence[Mapping[str, Any]]) -> Decision:
    """What the user does after an answer, from the judge's reading of it and of the answers
    before (``earlier``, oldest first): the goal is met when every item the user wants was given;
    the user gives up when the assistant has declined twice, or gave an earlier answer again word
    for word while something is missing (asking again gets nothing new); otherwise the
    conversation goes on. A real user rephrases once after a first refusal."""
    if reading.met:
        return Decision("goal_met", reading.reason)
    declines = sum(r.declined for r in (*earlier, reading))
    if reading.declined and declines >= 2:
        return Decision("gave_up", f"the assistant declined {declines} times ({reading.reason})")
    answers = _answers(turns)
    if len(answers) >= 2 and answers[-1] in answers[:-1]:
        return Decision("gave_up", f"the assistant gave an earlier answer again, and something is still missing "
                                   f"({reading.reason})")
    return Decision("continue", reading.reason)
