"""A turn of a conversation read in its conversation: claim verdicts and generated questions
that see the earlier turns (``Sample.history``).

Only a sample with a history comes here; a single-turn sample keeps the single-turn prompts,
cache keys and scores. The response's claims are the shared ones (extracted once), and the
verdicts against the contexts alone are the shared step (faithfulness and context recall share
it). On top of them, :func:`verdicts` does three things:

1. **Reading references through what the user said.** A claim that holds a referring word
   ("it", "they", "this", "there" as a place...: :data:`REFERRING`), or whose words missing from
   the contexts are all words the user used (:func:`names_from_history`), is checked
   again against the contexts followed by the user's messages so far
   (``verify_claim_conversation`` / ``verify_claims_conversation``): they tell what its words
   refer to, the facts must still come from the contexts. The claim's P(supported) is the larger
   of the two checks. **History is context, not evidence:** the assistant's earlier messages are
   never shown in this check, so nothing the assistant said before can support what it says now
   (a model agreeing with itself proves nothing); a reference only an assistant message resolves
   stays unresolved. Any other claim is not re-checked: the history has nothing to resolve in
   it, and a second, more lenient look only raised unfaithful answers (a claim on a topic the
   user raised, with words of its own the contexts do not hold, is exactly the unsupported kind).
   "Supported" here means P(supported) at or above :data:`RECHECK_BELOW` (0.5), whatever the
   run's threshold, so a threshold changes the verdicts and the count form but never a turn's
   expected-form value.
2. **Which earlier message resolved it.** For a claim the user's messages made supported (or
   more likely supported than the contexts alone), the embedded judge checks it against the
   contexts with each shown earlier user message alone and names the one with the highest
   P(supported) (latest first on a tie); a remote judge names the message in its verdict.
   Recorded as a :class:`Resolution` (history position, turn, role).
3. **Restating the user.** A claim still unsupported is checked against what the user stated
   (the sentences of their earlier messages and of this turn's question that are not questions,
   with the shared claim prompt): a claim they support restates the user and is not a
   hallucination (``target="user"``). A question states nothing: "Yes, it does" to "Does it?"
   is a claim to check against the contexts, not a restatement.

The messages shown are the last :data:`MAX_MESSAGES` of the history (user messages only for the
verdicts; user and assistant messages for rewriting the question), each on one line and cut at
:data:`MAX_MESSAGE_CHARS` characters, inside one fenced ``<conversation>`` block placed after the
contexts (the long shared prefix stays first, so the embedded judge reuses it across claims and
across the two checks).
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable, Sequence
from itertools import compress
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from .._score import ClaimVerdict
from ..calls import FENCE_TOKENS, fit_for_judge
from ..dataset import Conversation, Turn
from ..errors import OutputError
from ..judge import Answer, Judge, JudgeFailedError, JudgeRejectedError
from ..prompts import fence, load_prompt, neutralise
from . import _questions, _verdicts
from ._calibrated import assess_claim
from ._signals import compute_signals, unfence
from ._text import LANGUAGE_NAMES, content_words, evident_language, language, split_sentences
from ._types import (
    ConversationVerdicts,
    GeneratedQuestions,
    Resolution,
    contexts_block,
    lenient_bool,
    numbered,
    refs,
    verdict_items,
)

if TYPE_CHECKING:
    from ._sample import SampleAnalyses

__all__ = ["MAX_MESSAGES", "MAX_MESSAGE_CHARS", "MAX_SAID", "RECHECK_BELOW", "REFERRING", "conversation_block", "judge_items",
           "questions", "refers", "transcript", "user_statements", "verdicts"]

MAX_MESSAGES = 8  # the last this many user/assistant messages of the history are shown
MAX_MESSAGE_CHARS = 1000  # each cut to this many characters
RECHECK_BELOW = 0.5
"""A check through the conversation (or the user's words) raises a claim when it gives P(supported)
at or above this. Fixed, not the run's ``support_threshold``: a threshold (``--threshold``, an
alignment) changes the verdicts and the count form, never which probabilities the expected form
averages."""
MAX_SAID = 16  # a rewritten question must share a word with this turn's or the user's last 16 messages
# Words that point back at something named earlier (third-person pronouns, demonstratives,
# "there" of a place), in the languages the text functions read. Articles that double as
# pronouns (French "le", Dutch "het", Spanish "el") are left out: they would flag every claim.
_REFERRING_TEXT = {
    "en": "it its they them their theirs this these those he him his she her hers there same former latter",
    "de": "es er sie ihn ihm ihr ihre ihren ihrem sein seine seinen seinem dies diese dieser dieses "
          "diesem diesen dort dasselbe derselbe dieselbe",
    "fr": "il elle ils elles lui leur leurs ceci cela ça celui celle ceux celles là",
    "es": "él ella ellos ellas ello esto eso este esta estos estas ese esa esos esas allí ahí allá",
    "pt": "ele ela eles elas isso isto aquilo este esta estes estas esse essa esses essas lá ali",
    "it": "lui lei loro esso essa essi esse questo questa questi queste quello quella quelli quelle lì là",
    "nl": "hij zij ze hem haar hun dit deze daar",
}
REFERRING = frozenset(w for words in _REFERRING_TEXT.values() for w in words.split())
# Chinese and Japanese: pronouns and demonstratives found inside the text (no spaces to split on)
_REFERRING_CJK = ("它", "他", "她", "这", "那", "该", "此", "其", "これ", "それ", "あれ", "この", "その", "あの",
                  "彼", "そこ")
_WORD = re.compile(r"[^\W\d_]+")
# "there is/are..." introduces something; it does not point back at anything
_EXISTENTIAL = re.compile(
    r"\bthere(?:'s|\s+(?:is|are|was|were|will|would|may|might|can|could|must|should|seems?|"
    r"appears?|exists?|remains?|has|have|had)\b)", re.IGNORECASE)
# "Yes, the Trail comes in red": the answer word is not a word the claim names
_ANSWER_WORDS = frozenset({"yes", "no", "ja", "nein", "oui", "non", "si", "sí", "sim", "não", "nao", "nee"})
# line breaks and other control characters (C0, DEL, C1, the Unicode line and paragraph separators)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def refers(claim: str) -> bool:
    """True when the claim holds a referring word (see :data:`REFERRING`); "there" of "there
    is/are" introduces and does not count."""
    text = _EXISTENTIAL.sub(" ", claim)
    if any(w.lower() in REFERRING for w in _WORD.findall(text)):
        return True
    return any(r in text for r in _REFERRING_CJK)


def names_from_history(claim: str, contexts: Sequence[str], history: Sequence[Turn],
                       question: str | None = None) -> bool:
    """Whether the claim's words that the contexts lack are all words the user used, in an earlier
    message or in this turn's question (and there is at least one): "The Trail comes in red"
    against contexts that say "this bike is sold in red", after the user asked about the Trail
    and now "Does it come in red?". The history then says what the claim names; a claim with
    words found in neither brings facts of its own and is not re-read."""
    source = " ".join(contexts)
    lang = language(source)  # the claim's words read by its source's rules, as the signals do
    missing = set(content_words(claim, lang)) - set(content_words(source, lang)) - _ANSWER_WORDS
    if not missing:
        return False
    said = {w for _, _, m in _shown(history) for w in content_words(m.content, lang)}
    said |= set(content_words(question or "", lang))
    return missing <= said


def turn_of(history: Sequence[Turn]) -> list[int]:
    """The 0-based turn each message belongs to: the number of assistant turns
    (``Conversation.assistant_turns``) before it, so a user message and the steps of an agent's
    answer belong to the turn that answers them."""
    answers = Conversation("", tuple(history)).assistant_turns
    return [bisect.bisect_left(answers, i) for i in range(len(history))]  # answers before i


EVIDENCE_ROLES = ("user",)  # whose earlier words a verdict may read: never the assistant's own
CHAT_ROLES = ("user", "assistant")


def _shown(history: Sequence[Turn], roles: tuple[str, ...] = EVIDENCE_ROLES) -> list[tuple[int, int, Turn]]:
    """(position in history, turn index, message) of the messages shown to the judge: by default
    the user's only (see the module docstring: the assistant's words are never evidence).

    Read from the end: the cost follows the messages shown, not the history's length (every
    turn of a long conversation comes here), apart from counting the history's assistant turns."""
    picked: list[int] = []
    for i in range(len(history) - 1, -1, -1):
        m = history[i]
        if m.role in roles and m.content.strip():
            picked.append(i)
            if len(picked) == MAX_MESSAGES:
                break
    if not picked:
        return []
    turns = _turns_from(history, picked[-1])
    return [(i, turns[i - picked[-1]], history[i]) for i in reversed(picked)]


def _turns_from(history: Sequence[Turn], start: int) -> list[int]:
    """:func:`turn_of` of the messages from ``start`` on: the history's assistant turns (counted
    at C speed; an assistant message that calls tools before another assistant message is a step,
    not a turn), less those at each position or later (read backwards from the end)."""
    n = len(history)
    roles = list(map(attrgetter("role"), history))
    total = roles.count("assistant")
    for i in compress(range(n), map(attrgetter("tool_calls"), history)):
        j = i + 1
        while j < n and roles[j] not in CHAT_ROLES:
            j += 1
        total -= roles[i] == "assistant" and j < n and roles[j] == "assistant"
    out: list[int] = []
    after = 0  # assistant turns at this position or later
    later: str | None = None  # the role of the next user or assistant message
    for i in range(n - 1, start - 1, -1):
        m = history[i]
        after += m.role == "assistant" and not (m.tool_calls and later == "assistant")
        if m.role in CHAT_ROLES:
            later = m.role
        out.append(total - after)
    return out[::-1]


def _one_line(text: str) -> str:
    """``text`` with every line break and control character made a space and white space
    collapsed: a role, a tool's name or an argument's key written into a numbered conversation
    cannot start a line of its own (a forged "[9] user (turn 0): ...")."""
    return " ".join(_CONTROL.sub(" ", text).split())


def _line(m: Turn) -> str:
    text = " ".join(m.content.split())
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 1] + "…"
    return text


def conversation_block(history: Sequence[Turn], question: str | None,
                       only: int | None = None, roles: tuple[str, ...] = EVIDENCE_ROLES) -> str:
    """The fenced conversation: one numbered line per shown message ("[1] user (turn 0): ..."),
    then this turn's question; ``only``: just the shown message at that history position;
    ``roles``: whose messages are shown (the user's by default)."""
    lines = [f"[{n}] {_one_line(m.role)} (turn {turn}): {neutralise(_line(m))}"
             for n, (i, turn, m) in enumerate(_shown(history, roles), start=1) if only is None or i == only]
    if question and question.strip() and only is None:
        lines.append(f"[this turn] user: {neutralise(' '.join(question.split()))}")
    return fence("conversation", "\n".join(lines))


def user_statements(texts: Iterable[str]) -> list[str]:
    """What a user stated in ``texts`` (their messages): the sentences (``split_sentences``) that
    are not questions, i.e. that do not end in "?" or "？". A question states nothing ("So I can
    use -prune with -delete?"): an answer that repeats it as a statement ("Yes, -prune works with
    -delete") restates no one and needs the contexts' support."""
    return [t for text in texts for t in split_sentences(text) if not t.rstrip().endswith(("?", "？"))]


def _user_statements(history: Sequence[Turn], question: str | None) -> list[str]:
    """What the user stated (:func:`user_statements`) in their earlier messages and in this
    turn's question."""
    texts = [m.content for m in history if m.role == "user" and m.content.strip()]
    if question and question.strip():
        texts.append(question)
    return user_statements(texts)


def _user_block(statements: Sequence[str]) -> str:
    """What the user stated, one sentence a line."""
    return fence("conversation", "\n".join(f"user: {neutralise(t)}" for t in statements))


async def verdicts(sa: SampleAnalyses) -> ConversationVerdicts:
    """The response's claims judged in the conversation (module docstring)."""
    s = sa.sample
    history = s.history or ()
    base = await sa.response_vs_contexts()
    assert base is not None, "faithfulness plans the verdicts against the contexts"
    judge = sa.need_judge()
    shown = _shown(history)
    claims = [v.claim for v in base.verdicts]
    first = [_p(v) for v in base.verdicts]
    ctx_texts = list(s.contexts or ())
    again = [i for i, c in enumerate(claims) if refers(c) or names_from_history(c, ctx_texts, history, s.question)]
    final = list(base.verdicts)
    resolutions: list[Resolution] = []
    answers: list[Answer[Any]] = []
    if again and shown:
        ctx = fit_for_judge(judge, list(s.contexts or ()), field="contexts", output_tokens=64 + 60 * len(again),
                            alongside=[*(claims[i] for i in again), conversation_block(history, s.question)],
                            record=sa.truncations, per_item=FENCE_TOKENS, drop=True)
        ctx_block = contexts_block(ctx)
        source = ctx_block + "\n\n" + conversation_block(history, s.question)
        batch = [claims[i] for i in again]
        if judge.supports_choices:
            checked = await _by_choices(sa, judge, batch, source, [base.verdicts[i] for i in again], answers)
        else:
            checked = await _by_json(sa, judge, batch, source, answers)
        for i, (p2, supported2, sig, message, reason) in zip(again, checked):
            old = base.verdicts[i]
            if p2 is None:
                better = supported2 and not old.supported
            else:
                better = p2 >= RECHECK_BELOW and p2 > first[i]
            if not better:
                continue  # the contexts alone support it at least as well
            v = ClaimVerdict(claim=old.claim, supported=supported2, probability=p2, reason=reason,
                             target="contexts+conversation", signals=sig)
            if judge.supports_choices:
                res = await _resolve(sa, judge, old.claim, ctx_block, history, s.question,
                                     old.signals.get("judge_prior"), answers)
            else:
                res = _named(old.claim, message, shown)
            if res is not None:
                resolutions.append(res)
                v = _with_reason(v, res)
            final[i] = v
    still = [i for i, v in enumerate(final) if _p(v) < RECHECK_BELOW]
    statements = _user_statements(history, s.question)
    if still and statements:
        user = _user_block(statements)
        # no reason asked: a claim the user did not say keeps its reason against the contexts
        said = await _verdicts.verify(sa, [final[i].claim for i in still], "user", user, reasons=False)
        answers_refs = said.refs
        for i, v in zip(still, said.verdicts):
            if _p(v) >= RECHECK_BELOW:
                final[i] = ClaimVerdict(claim=v.claim, supported=True, probability=v.probability,
                                        reason=v.reason or "restates what the user said", target="user",
                                        signals=v.signals)
    else:
        answers_refs = ()
    return ConversationVerdicts(tuple(final), tuple(resolutions), len(shown),
                                base.refs + refs(*answers) + answers_refs)


def _p(v: ClaimVerdict) -> float:
    """A verdict's P(supported); 1 or 0 for a verdict without a probability (a remote judge)."""
    return v.probability if v.probability is not None else float(v.supported)


def _with_reason(v: ClaimVerdict, res: Resolution) -> ClaimVerdict:
    note = f"what it refers to is set by message {res.message} ({res.role}, turn {res.turn})"
    reason = f"{v.reason}; {note}" if v.reason else note
    return ClaimVerdict(claim=v.claim, supported=v.supported, probability=v.probability, reason=reason,
                        target=v.target, signals=v.signals)


def _named(claim: str, number: int, shown: list[tuple[int, int, Turn]]) -> Resolution | None:
    if not 1 <= number <= len(shown):
        return None
    pos, turn, m = shown[number - 1]
    return Resolution(claim, pos, turn, m.role)


def _assess(sa: SampleAnalyses, judge: Judge, claim: str, source: str, p_yes: float,
            prior: float | None) -> tuple[float, dict[str, float]]:
    if sa.settings.calibrated:
        p, sig = assess_claim(claim, source, p_yes, prior, model=judge.model, question=sa.sample.question or "",
                              across_languages=sa.languages is not None)
        assert p is not None
        return p, sig
    return p_yes, {**compute_signals(claim, unfence(source)), "judge_yes": p_yes}


async def _by_choices(
    sa: SampleAnalyses, judge: Judge, claims: list[str], source: str, old: list[ClaimVerdict],
    answers: list[Answer[Any]],
) -> list[tuple[float | None, bool, dict[str, float], int, str]]:
    prompt = load_prompt("verify_claim_conversation")
    thr = sa.settings.support_threshold
    got: list[Answer[dict[str, float]]] = []
    async with sa.batch:  # back to back: the contexts and the conversation are the shared prefix
        for c in claims:
            got.append(await judge.choose(
                prompt, {"source": source, "claim": fence("claim", c), "claim_text": c,
                         "target": "contexts+conversation"},
                use_cache=sa.settings.use_cache,
            ))
    answers.extend(got)
    out: list[tuple[float | None, bool, dict[str, float], int, str]] = []
    for c, a, v in zip(claims, got, old):
        p, sig = _assess(sa, judge, c, source, a.value["Yes"], v.signals.get("judge_prior"))
        out.append((p, p >= thr, sig, 0, ""))
    return out


async def _by_json(
    sa: SampleAnalyses, judge: Judge, claims: list[str], source: str, answers: list[Answer[Any]],
) -> list[tuple[float | None, bool, dict[str, float], int, str]]:
    n = len(claims)

    def validate(d: dict[str, Any]) -> list[tuple[bool, int, str]]:
        out = []
        for i, item in enumerate(verdict_items(d, n, "claim")):
            supported = lenient_bool(item.get("supported"), f"verdict {i + 1} 'supported'")
            message = item.get("message")
            if message is None:
                message = 0
            if not isinstance(message, int) or isinstance(message, bool):
                raise OutputError(f"verdict {i + 1} 'message' must be a message number (0 for none)")
            reason = item.get("reason")
            out.append((supported, message, reason if isinstance(reason, str) else ""))
        return out

    ans = await judge.ask(
        load_prompt("verify_claims_conversation"),
        {"source": source, "claims": numbered("claims", claims), "claim_list": list(claims),
         "target": "contexts+conversation"},
        validate, count=n, max_tokens=64 + 60 * n, use_cache=sa.settings.use_cache,
    )
    answers.append(ans)
    texts = unfence(source)
    return [(None, sup, compute_signals(c, texts), message, reason)
            for c, (sup, message, reason) in zip(claims, ans.value)]


async def _resolve(
    sa: SampleAnalyses, judge: Judge, claim: str, ctx_block: str, history: Sequence[Turn],
    question: str | None, prior: float | None, answers: list[Answer[Any]],
) -> Resolution | None:
    """The shown earlier message that, alone with the contexts, best supports the claim."""
    prompt = load_prompt("verify_claim_conversation")
    shown = _shown(history)
    probs: dict[int, float] = {}
    async with sa.batch:
        for pos, _, _ in reversed(shown):  # latest first: it wins a tie
            source = ctx_block + "\n\n" + conversation_block(history, question, only=pos)
            a = await judge.choose(
                prompt, {"source": source, "claim": fence("claim", claim), "claim_text": claim,
                         "target": f"message:{pos}"},
                use_cache=sa.settings.use_cache,
            )
            answers.append(a)
            probs[pos] = _assess(sa, judge, claim, source, a.value["Yes"], prior)[0]
    if not probs:
        return None
    best = max(probs, key=lambda k: (probs[k], k))
    turn, role = next((t, m.role) for pos, t, m in shown if pos == best)
    return Resolution(claim, best, turn, role, probs)


async def questions(sa: SampleAnalyses) -> GeneratedQuestions:
    """The user's question rewritten to stand alone (``standalone_question``: the chat so far and
    this turn's question, never the response), and N questions the response answers (the shared
    single-turn step, from the response alone). Two calls, so the rewritten question cannot echo
    the answer: an off-topic answer's questions do not match it, and the score falls.

    The rewrite is kept only when it shares a content word with what the user said (this turn's
    question or one of their last :data:`MAX_SAID` messages): a rewrite in another language or
    about something else is set aside for the question as asked, and the evidence says so
    (``standalone_rejected``)."""
    judge = sa.need_judge()
    s = sa.sample
    generated = await _questions.generate(sa)
    asked = s.question or ""
    said = [*_last_user_messages(s.history or (), MAX_SAID), asked]
    lang = evident_language(" ".join(said[-2:]))

    def validate(d: dict[str, Any]) -> str:
        q = d.get("question")
        if not isinstance(q, str) or not q.strip():
            raise OutputError('"question" must be the user\'s question rewritten to stand alone')
        return " ".join(q.split())

    conversation = conversation_block(s.history or (), asked, roles=CHAT_ROLES)
    ans = await judge.ask(
        load_prompt("standalone_question"),
        {"conversation": conversation,
         "language": LANGUAGE_NAMES[lang] if lang else "the language of the last user message",
         "question_text": asked},
        validate, max_tokens=120, use_cache=sa.settings.use_cache,
    )
    standalone, rejected = ans.value, None
    words = set(content_words(standalone))
    if asked.strip() and words and not words & set(content_words(" ".join(said))):
        standalone, rejected = asked, ans.value
    return GeneratedQuestions(generated.questions, generated.noncommittal, generated.refs + refs(ans),
                              standalone_question=standalone, standalone_rejected=rejected)


def _last_user_messages(history: Sequence[Turn], n: int) -> list[str]:
    """The contents of the user's last ``n`` messages, in order (read from the end)."""
    out: list[str] = []
    for i in range(len(history) - 1, -1, -1):
        if len(out) == n:
            break
        if history[i].role == "user":
            out.append(history[i].content)
    return out[::-1]


# ---- the whole conversation, for the conversation-level metrics ------------------------------


def transcript(turns: Sequence[Turn]) -> tuple[str, list[tuple[int, int, Turn]]]:
    """The fenced conversation with every message numbered from 1 ("[3] assistant (turn 1): ...
    [calls: search(q="x")]", "[4] tool search (turn 1): ..."), each cut at
    :data:`MAX_MESSAGE_CHARS`; and (number, turn, message) of each shown message."""
    lines: list[str] = []
    shown: list[tuple[int, int, Turn]] = []
    for m, turn in zip(turns, turn_of(turns)):
        if m.role == "system" or not (m.content.strip() or m.tool_calls):
            continue
        n = len(shown) + 1
        who = _one_line(f"tool {m.name}" if m.role == "tool" and m.name else m.role)
        text = _line(m)
        if m.tool_calls:
            calls = "; ".join(_call(c.name, c.args) for c in m.tool_calls)
            text = f"{text} [calls: {calls}]".strip()
        lines.append(f"[{n}] {neutralise(who)} (turn {turn}): {neutralise(text)}")
        shown.append((n, turn, m))
    return fence("conversation", "\n".join(lines)), shown


def _escaped(js: str) -> str:
    """JSON text with its remaining control characters written as ``\\uXXXX`` (same value)."""
    return _CONTROL.sub(lambda m: "".join(f"\\u{ord(c):04x}" for c in m.group()), js)


def _call(name: str, args: Any) -> str:
    """``name(key=value, ...)`` on one line: the name and keys through :func:`_one_line`, each
    value as JSON with every line break escaped (JSON leaves U+2028, U+2029 and the C1 controls
    raw)."""
    inner = ", ".join(f"{_one_line(str(k))}={_escaped(json.dumps(v, ensure_ascii=False, sort_keys=True))}"
                      for k, v in dict(args).items())
    return f"{_one_line(name)}({inner})"


async def judge_items(
    sa: SampleAnalyses, step: str, conversation: str, items: Sequence[str], extra: str = "",
) -> tuple[list[tuple[bool, float | None, str]], tuple[Any, ...]]:
    """A verdict (ok, P(Yes) or None, reason) for each item read against the conversation:
    one JSON call (``step``) for a remote judge; for the embedded judge, one yes/no call per item
    (``step_choice``: the conversation first, shared by every item), and a reason asked with the
    JSON prompt for the items judged No (unless the explanation mode is ``none``)."""
    judge = sa.need_judge()
    thr = sa.settings.support_threshold
    conversation = fit_for_judge(judge, [conversation], field="conversation",
                                 output_tokens=64 + 60 * len(items), alongside=[*items, extra],
                                 record=sa.truncations)[0]
    extra_block = f"\n{extra}\n" if extra else ""

    async def ask(texts: Sequence[str]) -> Answer[list[tuple[bool, str]]]:
        n = len(texts)

        def validate(d: dict[str, Any]) -> list[tuple[bool, str]]:
            out = []
            for i, item in enumerate(verdict_items(d, n, "item")):
                ok = lenient_bool(item.get("verdict"), f"verdict {i + 1} 'verdict'")
                reason = item.get("reason")
                out.append((ok, reason.strip() if isinstance(reason, str) else ""))
            return out

        return await judge.ask(
            load_prompt(step),
            {"conversation": conversation, "extra": extra_block, "items": numbered("text", texts),
             "item_list": list(texts)},
            validate, count=n, max_tokens=64 + 60 * n, use_cache=sa.settings.use_cache,
        )

    if not items:
        return [], ()
    if not judge.supports_choices:
        ans = await ask(items)
        return [(ok, None, reason) for ok, reason in ans.value], refs(ans)
    answers: list[Answer[Any]] = []
    prompt = load_prompt(step + "_choice")
    async with sa.batch:  # back to back: the conversation is the shared prefix
        for item in items:
            answers.append(await judge.choose(
                prompt, {"conversation": conversation, "extra": extra_block, "item": fence("text", item),
                         "item_text": item},
                use_cache=sa.settings.use_cache,
            ))
    out: list[tuple[bool, float | None, str]] = []
    for item, a in zip(items, list(answers)):
        p = a.value["Yes"]
        reason = ""
        if (p < thr and sa.settings.explain != "none") or sa.settings.explain == "all":
            try:
                why = await ask([item])
                answers.append(why)
                reason = why.value[0][1]
            except JudgeRejectedError:
                raise  # a rejected key stops the run; it is not a missing courtesy
            except JudgeFailedError:
                reason = ""  # a reason is a courtesy; the verdict stands without it
        out.append((p >= thr, p, reason))
    return out, refs(*answers)
