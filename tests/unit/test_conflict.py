"""Overlap never lifts a contradiction: when the chunk sentence closest to a claim says otherwise
(another number, a negation, an opposite word), the embedded judge's combined P(supported) is at
most the judge's own P(Yes); diagnose reads "contradicted" by the same rule."""

from __future__ import annotations

import pytest

from ragsight.analyses import (
    CONFLICT_RULE,
    ConflictRule,
    closest_sentence,
    says_otherwise,
    source_conflict,
)
from ragsight.analyses._calibrated import assess_claim, combine
from ragsight.analyses._signals import compute_signals, describe_signals

WAL = ("WAL mode changes the journal. The page size cannot be changed once the database is in WAL mode. "
       "It is not possible to change the page size after entering WAL mode.")
BEGIN = ("Transactions can be DEFERRED, IMMEDIATE, or EXCLUSIVE. The default transaction behavior is DEFERRED. "
         "A plain BEGIN starts a DEFERRED transaction.")


@pytest.mark.parametrize(
    ("claim", "sentence", "kind"),
    [
        ("You can change the page size at any time in WAL mode.",
         "It is not possible to change the page size after entering WAL mode.", "negation"),
        ("flock detects deadlock.", "flock does not detect deadlock.", "negation"),
        ("bzip2 uses 64-bit CRCs.", "bzip2 uses 32-bit CRCs.", "number"),
        ("A plain BEGIN starts an IMMEDIATE transaction.", "A plain BEGIN starts a DEFERRED transaction.", "antonym"),
        ("Entries larger than SIZE are excluded.", "Entries smaller than SIZE are excluded.", "antonym"),
        # the same statement: nothing to tell
        ("flock does not detect deadlock.", "flock does not detect deadlock.", ""),
        ("bzip2 uses 32-bit CRCs.", "As a self-check, bzip2 uses 32-bit CRCs.", ""),
        # both sides name the pair: not an opposite
        ("Both DEFERRED and IMMEDIATE transactions exist.", "Transactions are DEFERRED or IMMEDIATE.", ""),
        # "without" is a preposition here, not a negation of what the claim states
        ("ssh-keygen generates an RSA key.", "If invoked without any arguments, ssh-keygen generates an RSA key.", ""),
    ],
)
def test_says_otherwise(claim: str, sentence: str, kind: str) -> None:
    assert says_otherwise(claim, sentence) == kind


def test_the_closest_sentence_must_hold_half_of_the_claims_words() -> None:
    share, rank, sentence = closest_sentence("You can change the page size at any time in WAL mode.", ["Intro.", WAL])
    assert rank == 2 and share >= 0.5 and "page size" in sentence
    assert source_conflict("You can change the page size at any time in WAL mode.", ["Intro.", WAL])[0] == "negation"
    # a sentence about something else, negated, is not a contradiction of the claim
    assert source_conflict("Vacuum rebuilds the database file.", ["The page size is not changed by a checkpoint."]) == (
        "", None, "")


def test_a_contradicted_claim_is_not_lifted_above_the_judge() -> None:
    """A new user's cases: judge 0.44 and 0.39, accepted at 0.68 and 0.51 on their words."""
    for claim, source, judge_p in [("A plain BEGIN starts an IMMEDIATE transaction.", BEGIN, 0.44),
                                   ("You can change the page size at any time in WAL mode.", WAL, 0.39)]:
        p, signals = assess_claim(claim, source, judge_p)
        assert signals["says_otherwise"] == 1.0 and signals["capped_by_conflict"] == 1.0
        assert p == pytest.approx(judge_p) and p < 0.5
        assert combine(judge_p, signals, conflict_guard=False) >= 0.5  # what it was before
        assert "the closest sentence says otherwise" in describe_signals(signals)


def test_the_guard_only_lowers_and_never_below_the_judge() -> None:
    signals = compute_signals("A plain BEGIN starts an IMMEDIATE transaction.", [BEGIN])
    assert signals["says_otherwise_antonym"] == 1.0
    for judge_p in (0.0, 0.1, 0.44, 0.5, 0.7, 0.95, 1.0):
        guarded = combine(judge_p, signals)
        assert guarded == pytest.approx(min(judge_p, combine(judge_p, signals, conflict_guard=False)))
    # a judge that says yes keeps its yes: the guard caps at the judge, it does not overrule it
    assert combine(0.9, signals) >= 0.5


def test_a_supported_claim_is_untouched() -> None:
    p, signals = assess_claim("A plain BEGIN starts a DEFERRED transaction.", BEGIN, 0.44)
    assert signals["says_otherwise"] == 0.0 and "capped_by_conflict" not in signals
    assert p is not None and p > 0.5


def test_without_a_judge_probability_the_signals_are_recorded_only() -> None:
    p, signals = assess_claim("You can change the page size at any time in WAL mode.", WAL, None)
    assert p is None and signals["says_otherwise_negation"] == 1.0 and "capped_by_conflict" not in signals


FIRST = ConflictRule()  # the first rule, with no added condition


def test_the_shipped_rule_needs_the_clause_to_state_the_claims_fact() -> None:
    """Another number, or a negation on one side, in a clause that speaks of another fact is not a
    contradiction: the first rule read one, the shipped rule does not."""
    assert CONFLICT_RULE.clause_share > 0 and CONFLICT_RULE.negation_share > CONFLICT_RULE.clause_share
    other_fact = ("The band released its second album in 1998.",
                  "In 2001 the band toured Europe with a new drummer after the album.")
    assert says_otherwise(*other_fact, FIRST) == "number"
    assert says_otherwise(*other_fact) == ""
    other_infection = ("Antibiotics do not treat viral infections such as the flu.",
                       "Antibiotics treat bacterial infections such as strep throat.")
    assert says_otherwise(*other_infection, FIRST) == "negation"
    assert says_otherwise(*other_infection) == ""
    assert source_conflict(other_infection[0], [other_infection[1]], FIRST)[0] == "negation"
    assert source_conflict(other_infection[0], [other_infection[1]]) == ("", None, "")
    # the same fact said otherwise still is
    assert says_otherwise("The server listens on port 8080.", "The server listens on port 8000.") == "number"


def test_aligned_numbers_need_a_shared_neighbour() -> None:
    """The candidate the bench also measures: differing numbers count only in the same place."""
    aligned = ConflictRule(aligned_numbers=True)
    assert says_otherwise("The server listens on port 8080.", "The server listens on port 8000.", aligned) == "number"
    assert says_otherwise("bzip2 uses 64-bit CRCs.", "bzip2 uses 32-bit CRCs.", aligned) == "number"
    born = ("Smith was born in 1990 in Leeds.", "Smith won the Leeds marathon in 1995.")
    assert says_otherwise(*born, FIRST) == "number"
    assert says_otherwise(*born, aligned) == ""
