"""The evidence lookup in other languages: language detection, tokenisation that is not
English-only (Chinese and Japanese in two-character pieces), per-language stop words and
endings, numbers; and English read exactly as before."""

from __future__ import annotations

import pytest

from ragsight.analyses._signals import compute_signals, numbers_in
from ragsight.analyses._text import (
    cjk_terms,
    content_words,
    evident_language,
    language,
    split_sentences,
)

CONTEXTS = {
    "en": ["The airline allows one checked bag of 23 kg on international flights. Extra bags cost 75 "
           "dollars each.", "Refunds are paid within 14 days to the original card."],
    "de": ["Die Fluggesellschaft erlaubt auf internationalen Flügen ein aufgegebenes Gepäckstück mit 23 kg. "
           "Zusätzliche Gepäckstücke kosten jeweils 75 Dollar.",
           "Erstattungen werden innerhalb von 14 Tagen auf die ursprüngliche Karte gezahlt."],
    "fr": ["La compagnie autorise un bagage enregistré de 23 kg sur les vols internationaux. Les bagages "
           "supplémentaires coûtent 75 dollars chacun.",
           "Les remboursements sont versés sous 14 jours sur la carte d'origine."],
    "es": ["La aerolínea permite una maleta facturada de 23 kg en los vuelos internacionales. Las maletas "
           "adicionales cuestan 75 dólares cada una.",
           "Los reembolsos se pagan en un plazo de 14 días a la tarjeta original."],
    "zh": ["航空公司允许国际航班托运一件23公斤的行李。额外的行李每件收费75美元。", "退款将在14天内退回原卡。"],
    "ja": ["航空会社は国際線で23キロの受託手荷物を1個認めています。追加の手荷物は1個につき75ドルかかります。",
           "返金は14日以内に元のカードに支払われます。"],
}
# (supported, wrong number)
CLAIMS = {
    "en": ("Passengers may check one bag of 23 kg.", "An extra bag costs 50 dollars."),
    "de": ("Passagiere dürfen ein Gepäckstück mit 23 kg aufgeben.", "Ein zusätzliches Gepäckstück kostet 50 Dollar."),
    "fr": ("Les passagers peuvent enregistrer un bagage de 23 kg.", "Un bagage supplémentaire coûte 50 dollars."),
    "es": ("Los pasajeros pueden facturar una maleta de 23 kg.", "Una maleta adicional cuesta 50 dólares."),
    "zh": ("乘客可以托运一件23公斤的行李。", "额外的行李每件收费50美元。"),
    "ja": ("乗客は23キロの手荷物を1個預けることができます。", "追加の手荷物は50ドルかかります。"),
}


def test_english_values_are_pinned() -> None:
    """English text is read as it was before other languages were added (these values are the
    ones the previous release computed)."""
    ctx = CONTEXTS["en"]
    assert compute_signals("Passengers may check one bag of 23 kg.", ctx) == {
        "overlap": 5 / 6, "overlap_best": 5 / 6, "bigram_overlap": 0.4, "numbers": 1.0, "n_numbers": 2.0,
        "entities": 1.0, "n_entities": 0.0, "missing": 1.0, "n_content": 6.0, "digits": 1.0, "n_digits": 1.0,
        "says_otherwise": 0.0}
    assert compute_signals("Refunds take 30 days and are paid by Acme Bank.", ctx) == {
        "overlap": 3 / 7, "overlap_best": 3 / 7, "bigram_overlap": 0.0, "numbers": 0.0, "n_numbers": 1.0,
        "entities": 0.0, "n_entities": 2.0, "missing": 4.0, "n_content": 7.0, "digits": 0.0, "n_digits": 1.0,
        "says_otherwise": 0.0}
    assert content_words("The cities' founders founded two museums in 1987.") == [
        "city", "founder", "found", "2", "museum", "1987"]
    # a French title inside an English question, an English stats table with "CHI": still English
    assert language("In La Cage Aux Folles, what was La Cage Aux Folles?") == "en"
    assert language("CHI 2018 CHI 2019 CHI 2020 totals") == "en"


@pytest.mark.parametrize("lang", sorted(CONTEXTS))
def test_the_language_is_detected(lang: str) -> None:
    assert language(" ".join(CONTEXTS[lang])) == lang


@pytest.mark.parametrize("text,lang", [
    ("De vlucht naar Amsterdam kost 200 euro en vertrekt van de terminal.", "nl"),
    ("O voo para Lisboa custa 200 euros e não inclui a bagagem de mão.", "pt"),
    ("Il volo per Roma costa 200 euro e parte dal terminal.", "it"),
])
def test_other_languages_are_detected(text: str, lang: str) -> None:
    assert language(text) == lang


@pytest.mark.parametrize("lang", [k for k in sorted(CONTEXTS) if k != "en"])
def test_the_signals_read_a_translation_as_they_read_english(lang: str) -> None:
    supported, wrong_number = CLAIMS[lang]
    good = compute_signals(supported, CONTEXTS[lang])
    bad = compute_signals(wrong_number, CONTEXTS[lang])
    assert good["overlap"] >= 0.6, good
    assert good["numbers"] == 1.0 and good["n_numbers"] >= 1
    assert bad["numbers"] == 0.0 and bad["n_numbers"] == 1.0  # 50 is not in the text, 75 is
    # before, a Chinese or Japanese sentence was one "word": nothing ever overlapped
    unrelated = compute_signals(CLAIMS[lang][0], CONTEXTS[lang][1])
    assert unrelated["overlap"] < good["overlap"]


def test_chinese_and_japanese_are_cut_into_pieces() -> None:
    assert cjk_terms("托运一件行李") == ["托运", "运一", "一件", "件行", "行李"]
    assert cjk_terms("航空公司的行李") == ["航空", "空公", "公司", "行李"]  # 的 cut out
    assert cjk_terms("手荷物を預けることができます") == ["手荷", "荷物", "預"]  # hiragana left out
    assert cjk_terms("フライトは") == ["フライト"]
    assert content_words("JAL的航班") == ["jal", "航班"]
    assert numbers_in("托运一件23公斤的行李", "zh") == {"23"}
    assert split_sentences("行李限额为23公斤。超重需付费！谢谢") == ["行李限额为23公斤。", "超重需付费！", "谢谢"]


def test_stop_words_and_endings_per_language() -> None:
    assert content_words("Die zusätzlichen Gepäckstücke kosten 75 Dollar.", "de") == [
        "zusatzlich", "gepackstuck", "kost", "75", "dollar"]
    assert content_words("Les bagages supplémentaires coûtent soixante-quinze dollars.", "fr")[:2] == [
        "bagag", "supplementair"]
    assert content_words("l'avion et les bagages", "fr") == ["avion", "bagag"]
    assert numbers_in("Es gibt drei Koffer und zwei Taschen.", "de") == {"3", "2"}



@pytest.mark.parametrize(("text", "lang"), [
    ("The default value of scale is 0.", "en"),
    ("You can check one bag of up to 23 kg for free.", "en"),
    ("Die Dokumente enthalten keine Angabe dazu, in welcher Sprache bc geschrieben ist.", "de"),
    ("Les batteries sont couvertes pendant deux ans.", "fr"),
    ("电池保修两年。", "zh"),
    # language() calls these English for want of function words; they do not show it
    ("Wie lange gilt die Garantie?", None),
    ("Ja, zwei Jahre.", None),
    ("Sí, dos años.", None),
    ("70.", None),
])
def test_a_language_is_evident_only_when_the_text_shows_it(text: str, lang: str | None) -> None:
    assert evident_language(text) == lang
