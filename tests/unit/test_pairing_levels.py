"""How two runs pair, level by level: the share that warns or refuses is each level's own, the
worst deciding, and the text names that level; data without conversations reads as before."""

from __future__ import annotations

from ragsight._stats import LevelPairing, Pairing, count_units, describe_counts, too_few_paired


def keys(conversations: int, turns_each: int) -> dict[tuple[str, ...], str]:
    out: dict[tuple[str, ...], str] = {}
    for c in range(conversations):
        out.update({("turn", f"c{c}", str(t)): "turn" for t in range(turns_each)})
        out[("turn", f"c{c}", "")] = "conversation"
    return out


def test_a_run_missing_conversations_but_no_turn_is_poor_for_the_conversations() -> None:
    a = keys(5, 4)
    b = {k: u for k, u in a.items() if u == "turn" or k[1] in ("c0", "c1")}  # 3 conversation rows gone
    pr = Pairing.of("A", "B", a, b)
    assert (pr.paired, max(pr.n_baseline, pr.n_other)) == (22, 25)  # 88% of the rows together
    assert pr.share == 0.4 and pr.poor and pr.partial and pr.poor_units == ("conversation",)
    assert pr.worst == LevelPairing("conversation", 5, 2, 2)
    assert pr.describe() == ("20 of 20 turns, 2 of 5 conversations paired between A and B; "
                             "unpaired in A: 3 conversations")
    assert pr.shortfall() == ("2 of 5 conversations (40%), 20 of 20 turns (100%) paired between A and B; "
                              "unpaired in A: 3 conversations")
    assert too_few_paired([pr]) == ("conversations", pr.shortfall())


def test_a_level_fully_paired_does_not_hide_another_below_the_threshold() -> None:
    a = keys(10, 1)
    b = {k: u for k, u in a.items() if k[1] != "c9" or u == "turn"}
    b = {k: u for k, u in b.items() if k[1] not in ("c7", "c8") or u == "conversation"}
    pr = Pairing.of("A", "B", a, b)
    assert [(lv.unit, lv.paired, lv.most) for lv in pr.levels] == [("turn", 8, 10), ("conversation", 9, 10)]
    assert pr.share == 0.8 and not pr.poor and pr.partial  # 80% is enough; 79% would not be


def test_data_without_conversations_reads_as_before() -> None:
    a = {("id", f"s{i}"): "sample" for i in range(20)}
    b = {k: u for k, u in a.items() if int(k[1][1:]) < 14}
    pr = Pairing.of("A", "B", a, b)
    assert pr.share == 0.7 and pr.poor and pr.poor_units == ("sample",)
    assert pr.shortfall() == "14 of 20 samples paired between A (20) and B (14); unpaired: 6 in A, 0 in B (70%)"
    assert too_few_paired([pr]) == ("samples", pr.describe())
    bare = Pairing("A", "B", 20, 14, 14)  # built without levels: all its rows are one level
    assert (bare.share, bare.poor, bare.shortfall()) == (0.7, True, pr.shortfall())


def test_a_run_counts_its_rows_as_the_pairing_line_does() -> None:
    assert describe_counts(count_units(keys(5, 2).values())) == "10 turns, 5 conversations"
    assert describe_counts(count_units(["sample"] * 17)) == "17 samples"
    assert describe_counts(count_units(["sample"])) == "1 sample"
    assert describe_counts(()) == "0 samples"


def test_one_row_of_a_level_is_counted_in_the_singular() -> None:
    from ragsight._stats import Pairing

    pr = Pairing.of("A", "B", {"t1": "turn", "t2": "turn", "c1": "conversation"},
                    {"t1": "turn", "c1": "conversation"})
    assert pr.describe().startswith("1 of 2 turns, 1 of 1 conversation paired between A and B")
    single = Pairing.of("A", "B", {"s1": "sample"}, {"s1": "sample"})
    assert single.describe() == "1 of 1 sample paired between A (1) and B (1)"
