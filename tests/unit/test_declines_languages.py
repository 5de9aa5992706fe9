"""The abstention detector reads declines in Portuguese, Italian, Dutch, Chinese and Japanese,
beside English, German, French and Spanish; an answer in those languages is not read
as a decline."""

from __future__ import annotations

import pytest

from ragsight.metrics.abstention import detect_declines

DECLINES = [
    "Os documentos não mencionam o prazo de garantia.",
    "Não sei.",
    "Purtroppo i documenti non specificano la durata della garanzia.",
    "Non lo so.",
    "Helaas, de documenten vermelden dat niet.",
    "Ik weet het niet.",
    "抱歉，文档中没有提到保修期。",
    "我不知道。",
    "申し訳ございませんが、資料には記載がありません。",
    "わかりません。",
    # a version number's point is not the end of a clause (a new-user trial: "6" / "0 de xz")
    "Les documents ne precisent pas la date de sortie de la version 6.0 de xz.",
    "Die Dokumente enthalten keine Angabe zum Datum der Version 6.0 von xz.",
]
ANSWERS = [
    "A garantia do quadro é de dez anos.",
    "La garanzia del telaio dura dieci anni.",
    "De garantie op het frame is tien jaar.",
    "车架的保修期为十年。",
    "フレームの保証期間は10年です。",
]


@pytest.mark.parametrize("text", DECLINES)
def test_a_decline_in_another_language_is_read_as_one(text: str) -> None:
    found = detect_declines(text)
    assert found.verdict == "declines", (text, found)
    assert found.matched


@pytest.mark.parametrize("text", ANSWERS)
def test_an_answer_in_another_language_is_not_a_decline(text: str) -> None:
    assert detect_declines(text).verdict in ("none", "not_english")


def test_kana_keep_their_voicing_marks() -> None:
    # NFKD folding would turn ございません into こさいません and miss the phrase
    assert detect_declines("存じません。").verdict == "declines"
