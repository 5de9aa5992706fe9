"""Deterministic text utilities, the one kit every part of ragsight uses to compare words: accent
folding, the stop words, a small symmetric stemmer, content words and numbers; sentence splitting
and entity normalisation. The verdict signals, the test-set filters and the report's evidence
highlighting all count "the same word" by these rules.

Languages: English, and German, French, Spanish, Portuguese, Italian, Dutch, Chinese and
Japanese. :func:`language` tells them apart by their function words (and by script for Chinese
and Japanese); a text in none of them is read by the English rules. English text is read exactly
as before the other languages were added. The others get their own stop words, number words and
a light suffix stripper (plural and gender endings); Chinese and Japanese, written without
spaces, are cut into overlapping two-character pieces of their Han (kanji) runs, as search
engines index them (Lucene's CJK bigrams), katakana words kept whole and hiragana (Japanese
particles and endings) and the commonest Chinese function characters left out."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence

__all__ = [
    "LANGUAGES",
    "LANGUAGE_NAMES",
    "NUMBER_RE",
    "NUMBER_WORDS",
    "STOP_WORDS",
    "cjk_terms",
    "content_words",
    "evident_language",
    "fold",
    "language",
    "languages_apart",
    "normalise_entity",
    "number_form",
    "number_words",
    "split_sentences",
    "stem",
    "stem_in",
    "stop_words",
    "tokens",
]

_STOP_TEXT = """
a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had
has have having he her here hers herself him himself his how i if in into is it its itself just
me more most my myself no nor not of off on once only or other our ours ourselves out over own
same she should so some such than that the their theirs them themselves then there these they
this those through to too under until up very was we were what when where which while who whom
why will with would you your yours yourself yourselves s t don now may might must shall upon
within without via per among amongst whose yet however although though since thus hence
onto around across along toward towards one's it's he's she's they're we're i'm
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())


def _wordlist(text: str) -> list[str]:
    return text.split()

NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
    "thirteen": "13", "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17",
    "eighteen": "18", "nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40",
    "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90",
    "hundred": "100", "thousand": "1000", "million": "1000000", "billion": "1000000000",
    "dozen": "12",
}

LANGUAGES = ("en", "de", "fr", "es", "pt", "it", "nl", "zh", "ja")

# Stop words of the other languages, accents folded (fold() runs before the comparison).
_OTHER_STOP_TEXT = {
    "de": """der die das den dem des ein eine einer eines einem einen und oder aber nicht ist sind war
        waren wird werden wurde wurden hat haben hatte hatten sein seine ihr ihre ich du er sie es wir
        mich mir dich dir uns euch sich mit von vom zu zum zur auf fur im in an am aus bei beim nach vor
        uber unter durch gegen ohne um als auch noch nur schon so wie wenn dass weil da dann doch ja
        nein kein keine keinen keinem dieser diese dieses diesem diesen jeder jede jedes man mehr sehr
        kann konnen muss mussen soll sollen darf durfen will wollen hier dort wo was wer wann warum
        welche welcher welches ab bis""",
    "fr": """le la les l un une des du de d et ou mais ne pas plus est sont etait etaient sera seront a
        ont avait ai as avons avez je tu il elle nous vous ils elles on me te se moi toi lui leur leurs
        ce cet cette ces mon ma mes ton ta tes son sa ses notre nos votre vos qui que quoi dont dans en
        sur sous avec sans pour par chez vers entre comme si tres aussi encore deja tout tous toute
        toutes au aux y c qu n s j m t""",
    "es": """el la los las un una unos unas y o pero no ni es son era eran fue fueron sera ser estar
        esta estan estaba ha han habia he de del al a en con sin por para sobre entre hasta desde yo tu
        ella nosotros vosotros ellos ellas me te se le les lo nos os mi mis tus su sus nuestro nuestra
        que quien cual cuando donde como muy mas tambien ya todo todos toda todas este estos estas ese
        esa esos esas hay""",
    "pt": """o a os as um uma uns umas e ou mas nao nem sao era eram foi foram sera ser estar esta
        estao estava ha tem tinha de do da dos das ao aos em no na nos nas num numa com sem por pelo
        pela pelos pelas para sobre entre ate desde eu tu ele ela vos eles elas me te se lhe lhes meu
        minha meus minhas seu sua seus suas que quem qual quando onde como muito mais tambem ja todo
        todos toda todas este estes estas esse essa isso isto""",
    "it": """il lo la i gli le un uno una e o ma non ne sono era erano fu furono sara essere stato ha
        hanno aveva di del dello della dei degli delle a al allo alla ai agli alle da dal dalla dai in
        nel nello nella nei nelle con su sul sulla per tra fra io tu lui lei noi voi loro mi ti si ci vi
        mio mia miei mie suo sua suoi sue che chi cui quale quando dove come molto piu anche gia tutto
        tutti tutta tutte questo questa questi queste quello quella""",
    "nl": """de het een en of maar niet is zijn was waren wordt worden werd werden heeft hebben had
        ik jij je hij zij ze wij we jullie u mij me hem haar ons hun zich van te tot met op in aan uit
        bij naar voor over onder door zonder om als ook nog al dat die dit deze wat wie waar wanneer
        hoe geen meer zeer kan kunnen moet moeten zal zullen er hier daar""",
}
_OTHER_STOP = {lang: frozenset(text.split()) for lang, text in _OTHER_STOP_TEXT.items()}
# Words that tell a language apart: its stop words that are not also common English words.
_ENGLISH_LOOKALIKES = frozenset(_wordlist(
    "die war man hat see come son sin mine den also bin art fast gift will was so da en do em no "
    "a as e i o u y me te se on ne tu ha he"))
_DETECT = {lang: frozenset(w for w in words - STOP_WORDS - _ENGLISH_LOOKALIKES if len(w) > 1)
           for lang, words in _OTHER_STOP.items()}

_OTHER_NUMBERS_TEXT = {
    "de": "zwei 2 drei 3 vier 4 funf 5 sechs 6 sieben 7 acht 8 neun 9 zehn 10 elf 11 zwolf 12 zwanzig 20 "
          "dreissig 30 hundert 100 tausend 1000",
    "fr": "deux 2 trois 3 quatre 4 cinq 5 six 6 sept 7 huit 8 neuf 9 dix 10 onze 11 douze 12 vingt 20 "
          "trente 30 cent 100 mille 1000",
    "es": "dos 2 tres 3 cuatro 4 cinco 5 seis 6 siete 7 ocho 8 nueve 9 diez 10 once 11 doce 12 veinte 20 "
          "treinta 30 cien 100 ciento 100 mil 1000",
    "pt": "dois 2 duas 2 tres 3 quatro 4 cinco 5 seis 6 sete 7 oito 8 nove 9 dez 10 onze 11 doze 12 "
          "vinte 20 trinta 30 cem 100 mil 1000",
    "it": "due 2 tre 3 quattro 4 cinque 5 sei 6 sette 7 otto 8 nove 9 dieci 10 undici 11 dodici 12 "
          "venti 20 trenta 30 cento 100 mille 1000",
    "nl": "twee 2 drie 3 vier 4 vijf 5 zes 6 zeven 7 acht 8 negen 9 tien 10 elf 11 twaalf 12 twintig 20 "
          "dertig 30 honderd 100 duizend 1000",
}
_OTHER_NUMBERS = {lang: dict(zip(text.split()[::2], text.split()[1::2]))
                  for lang, text in _OTHER_NUMBERS_TEXT.items()}
# Plural, gender and the commonest verb endings, longest first; one is stripped, leaving at least
# 3 letters. Symmetric, like the English stripper: it only has to map a word's forms together.
_SUFFIXES = {
    "de": ("ern", "en", "er", "es", "e", "n", "s"),
    "nl": ("en", "s", "e"),
    "fr": ("ees", "es", "ee", "er", "ez", "s", "x", "e"),
    "es": ("adas", "ados", "idas", "idos", "ada", "ado", "ida", "ido", "es", "os", "as", "an", "en", "ar",
           "er", "ir", "s", "o", "a"),
    "pt": ("adas", "ados", "idas", "idos", "ada", "ado", "ida", "ido", "ens", "es", "os", "as", "em", "am",
           "ar", "er", "ir", "s", "o", "a"),
    "it": ("ati", "ate", "ato", "ata", "are", "ere", "ire", "ano", "io", "i", "e", "o", "a"),
}
_CJK_RE = re.compile(r"[぀-ヿ㐀-䶿一-鿿豈-﫿]")
_KANA_RE = re.compile(r"[぀-ヿ]")
_SCRIPT_RUN = re.compile(r"[一-鿿㐀-䶿豈-﫿]+|[゠-ヿ]+|[぀-ゟ]+|[^぀-ヿ㐀-䶿一-鿿豈-﫿]+")
# The commonest Chinese function characters (particles, pronouns, the copula): cut out of a Han run.
_HAN_STOP = frozenset("的了是在和也就都而及与着或被把这那我你他她它们个之于以为吗呢吧啊很")


def stop_words(lang: str) -> frozenset[str]:
    """The stop words of ``lang`` (accents folded); English's for a language without a list."""
    return _OTHER_STOP.get(lang, STOP_WORDS)


def number_words(lang: str) -> dict[str, str]:
    """The number words of ``lang`` (one to twelve, tens, hundred, thousand) as digits."""
    return _OTHER_NUMBERS.get(lang, NUMBER_WORDS)


@functools.lru_cache(maxsize=8192)
def language(text: str) -> str:
    """The language of ``text``, one of :data:`LANGUAGES`: Chinese or Japanese when at least
    3 in 10 of its letters are Han or kana (Japanese when some are kana); else the language whose
    own distinct function words it holds most, when it holds two or more and more than twice as
    many English ones that are not also its own (a title in French inside an English question
    stays English); else English."""
    if not text.isascii():
        cjk = len(_CJK_RE.findall(text))
        if cjk >= 2:
            letters = sum(1 for ch in text if ch.isalpha())
            if cjk >= 0.3 * letters:
                return "ja" if _KANA_RE.search(text) else "zh"
    words = {t.lower() for t in tokens(text)}
    best, hits, english = "en", 0, 0
    for lang, detect in _DETECT.items():
        n = len(words & detect)
        if n > hits:
            # English words that are not also function words of this language ("a" is Spanish too)
            best, hits, english = lang, n, len(words & STOP_WORDS - _OTHER_STOP[lang])
    return best if hits >= 2 and hits > 2 * english else "en"


LANGUAGE_NAMES = {"en": "English", "de": "German", "fr": "French", "es": "Spanish", "pt": "Portuguese",
                  "it": "Italian", "nl": "Dutch", "zh": "Chinese", "ja": "Japanese"}


def evident_language(text: str) -> str | None:
    """The language of ``text`` when the text shows it, else None. :func:`language` falls back
    to English for a text it cannot place ("Wie lange gilt sie?" has too few German function
    words); here English needs two English function words and none of the words that tell
    another language apart, so a judge told "write in English" is told so only for English."""
    lang = language(text)
    if lang != "en":
        return lang
    words = {t.lower() for t in tokens(text)}
    if len(words & STOP_WORDS) < 2 or any(words & detect for detect in _DETECT.values()):
        return None
    return "en"


SOURCE_ENGLISH_WORDS = 5
"""Distinct English function words that make sources English for :func:`languages_apart` when
:func:`evident_language` does not place them (a short French chunk has none of them; an English
paragraph has dozens)."""


def languages_apart(texts: Sequence[str | None], sources: Sequence[str]) -> tuple[str, str] | None:
    """(the language of ``texts``, the language of ``sources``) when the words of ``texts`` show
    their language (:func:`evident_language`, read as one text), the sources' language
    (:func:`language`, read as one text) is another, else None: a German question and answer over
    English documents. Word overlap between a claim and its source means nothing then (the
    claim's words are translations of the source's), so the claim verdicts leave it out
    (``assess_claim(across_languages=True)``). The sources' language must show as well, English
    more leniently (:data:`SOURCE_ENGLISH_WORDS`): an English manual's "plus 5 bytes per block"
    holds a French function word."""
    mine = evident_language(" ".join(t for t in texts if t))
    joined = " ".join(s for s in sources if s)
    if mine is None or not joined.strip():
        return None
    theirs = evident_language(joined)
    if theirs is None and language(joined) == "en" and \
            len({t.lower() for t in tokens(joined)} & STOP_WORDS) >= SOURCE_ENGLISH_WORDS:
        theirs = "en"
    if theirs is None or mine == theirs:
        return None
    return mine, theirs


_TOKEN_RE = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)
NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?")


def fold(text: str) -> str:
    """Strip accents and unify apostrophes and dashes; keep case."""
    if text.isascii():
        return text  # nothing to strip or unify (the common case, and 20 times faster)
    s = unicodedata.normalize("NFKD", text)
    s = "".join(ch for ch in s if not unicodedata.combining(ch))
    return s.replace("\u2019", "'").replace("\u2018", "'").replace("\u2013", "-").replace("\u2014", "-")


def number_form(raw: str) -> str:
    """'1,200' -> '1200', '3.50' -> '3.5', '007' -> '7'."""
    s = raw.replace(",", "")
    if "." in s:
        whole, frac = s.split(".", 1)
        frac = frac.rstrip("0")
        whole = whole.lstrip("0") or "0"
        return f"{whole}.{frac}" if frac else whole
    return s.lstrip("0") or "0"


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A crude, symmetric suffix stripper (lower-case input): enough to match inflections."""
    w = word
    if w.endswith("'s"):
        w = w[:-2]
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and (w.endswith("ed") or (w.endswith("es") and w[-3] in "sxz")):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith("ss") and not w.endswith("us"):
        w = w[:-1]
    if len(w) > 4 and w.endswith("e"):
        w = w[:-1]
    return w


def tokens(text: str) -> list[str]:
    """Word and number tokens, accents stripped, case kept."""
    return _TOKEN_RE.findall(fold(text))


def _norm_token(tok: str) -> str | None:
    """The comparable form of one token, or None for a stop word."""
    if tok[0].isdigit():
        return number_form(tok)
    low = tok.lower()
    if low in NUMBER_WORDS:
        return NUMBER_WORDS[low]
    if low in STOP_WORDS or len(low) < 2:
        return None
    return stem(low)


def stem_in(word: str, lang: str) -> str:
    """``word`` (lower case, folded) without its ending in ``lang``: :func:`stem` for English."""
    if lang not in _SUFFIXES:
        return stem(word)
    for suffix in _SUFFIXES[lang]:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _norm_other(tok: str, lang: str) -> str | None:
    """:func:`_norm_token` for a language other than English (a Latin-script token)."""
    if tok[0].isdigit():
        return number_form(tok)
    low = tok.lower()
    if "'" in low and lang in ("fr", "it"):  # l'avion, dell'aereo: the word after the elision
        low = low.rsplit("'", 1)[1]
    numbers = _OTHER_NUMBERS.get(lang, {})
    if low in numbers:
        return numbers[low]
    if low in _OTHER_STOP.get(lang, STOP_WORDS) or len(low) < 2:
        return None
    return stem_in(low, lang)


def cjk_terms(run: str) -> list[str]:
    """The comparable pieces of a run of Chinese or Japanese text: each Han run cut at the
    commonest function characters, then into overlapping two-character pieces (one character
    alone stays whole); katakana runs whole; hiragana left out; other characters as words."""
    out: list[str] = []
    for seg in _SCRIPT_RUN.findall(run):
        ch = seg[0]
        if "぀" <= ch <= "ゟ":
            continue  # hiragana: particles and endings
        if "゠" <= ch <= "ヿ":
            if len(seg) > 1 or ch != "ー":
                out.append(seg)
            continue
        if not _CJK_RE.match(ch):
            n = _norm_token(seg) if seg and not seg.isspace() else None
            if n is not None:
                out.append(n)
            continue
        piece = ""
        for c in seg + "的":  # a stop character closes the last piece
            if c in _HAN_STOP:
                if len(piece) == 1:
                    out.append(piece)
                out.extend(piece[i:i + 2] for i in range(len(piece) - 1))
                piece = ""
            else:
                piece += c
    return out


def content_words(text: str, lang: str | None = None) -> list[str]:
    """Normalised content words (and numbers) in order, stop words removed. ``lang`` reads the
    text by that language's rules (the signals read a claim in its source's language); None
    detects it (:func:`language`)."""
    return list(_content_words(text, lang))


@functools.lru_cache(maxsize=8192)
def _content_words(text: str, lang: str | None = None) -> tuple[str, ...]:
    # Cached: the verdict signals ask for the words of the same contexts and sentences once per
    # claim, which made a sample's CPU cost grow with claims x context length.
    lang = lang or language(text)
    out = []
    for tok in tokens(text):
        if lang == "en":
            n = _norm_token(tok)
        elif _CJK_RE.search(tok):
            out.extend(cjk_terms(tok))
            continue
        elif lang in ("zh", "ja"):
            n = _norm_token(tok)  # a Latin word or a number inside Chinese or Japanese text
        else:
            n = _norm_other(tok, lang)
        if n is not None:
            out.append(n)
    return tuple(out)



# Abbreviations after which a period does not end a sentence.
_ABBREV = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "fig",
    "inc", "ltd", "co", "corp", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept",
    "oct", "nov", "dec", "approx", "dept", "est", "min", "max", "u.s", "u.k",
}
_BOUNDARY = re.compile(r"([.!?]+[\"')\]]*)(\s+)(?=[\"'(\[]?[A-Z0-9])")


_CJK_ENDS = ("。", "！", "？")
_CJK_SPLIT = re.compile(r"(?<=[。！？])")


def split_sentences(text: str) -> list[str]:
    """Split text into sentences, deterministically.

    Rules: a sentence ends at '.', '!' or '?' (with closing quotes or brackets) followed by
    white space and an upper-case letter or digit, unless the word before the period is a known
    abbreviation or a single letter (an initial); line breaks that separate paragraphs or list
    items also end a sentence; so does a Chinese or Japanese full stop, exclamation or question
    mark (。！？), space or not. Empty pieces are dropped.
    """
    out: list[str] = []
    for block in re.split(r"\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)", text):
        block = " ".join(block.split())
        if not block:
            continue
        start = 0
        for m in _BOUNDARY.finditer(block):
            end = m.end(1)
            before = block[start:m.start(1)].split()
            last = before[-1].lower().rstrip(".") if before else ""
            after = block[m.end():m.end() + 1]
            number_abbrev = last in ("no", "nr") and after.isdigit()  # "No. 5"
            if m.group(1).startswith(".") and (
                last in _ABBREV or number_abbrev or (len(last) == 1 and last.isalpha())
            ):
                continue
            piece = block[start:end].strip()
            if piece:
                out.append(piece)
            start = m.end()
        tail = block[start:].strip()
        if tail:
            out.append(tail)
    if any(mark in text for mark in _CJK_ENDS):
        # Chinese and Japanese sentences end at 。！？ with no space after them
        return [p.strip() for piece in out for p in _CJK_SPLIT.split(piece) if p.strip()]
    return out


_ARTICLES = re.compile(r"^(the|a|an)\s+")


def normalise_entity(entity: str) -> str:
    """Lower-case, strip accents, punctuation and leading articles; collapse white space.
    'The Eiffel Tower' and 'eiffel tower' match; '1,000' and '1000' match."""
    s = unicodedata.normalize("NFKD", entity)
    s = "".join(ch for ch in s if not unicodedata.combining(ch)).lower().strip()
    s = re.sub(r"(?<=\d),(?=\d{3}\b)", "", s)
    s = re.sub(r"[^\w\s%$€£.]", " ", s)
    s = re.sub(r"(?<!\d)\.|\.(?!\d)", " ", s)
    s = " ".join(s.split())
    s = _ARTICLES.sub("", s)
    return s
