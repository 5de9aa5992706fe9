"""The decline detector: does a text decline to answer ("I don't know", "The documents do not
say ...")? A deterministic reading clause by clause, in English and, by a shorter list, German,
French, Spanish, Portuguese, Italian, Dutch, Chinese and Japanese. Used by the abstention metric
(``ragsight.metrics.abstention``, which documents the rules and the measurements), by
faithfulness and answer relevancy, and by claim extraction (a claim that joins a decline to
content is split, ``_claims.apart_from_declines``)."""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

__all__ = ["FILLER", "META", "REFERRAL", "DeclineSignals", "detect_declines", "is_english"]

# ---- the phrase detector ---------------------------------------------------------------------

# The documents, as a response names them.
_DOCS = (r"(?:documents?|documentation|docs|manuals?|handbook|knowledge\s+base|context|texts?|excerpts?|"
         r"sources?|passages?|materials?|snippets?|"
         # a page or a record is also a thing a database holds: the response's only when named so
         r"(?:these|those|provided|retrieved|given)\s+(?:pages?|records?)|"
         r"information (?:provided|given|available|(?:that\s+)?i\s+have)|(?:provided|given|available) "
         r"(?:information|documents?|context|texts?|excerpts?|sources?|passages?)|"
         r"what\s+(?:i|we)\s+(?:was\s+|were\s+|have\s+been\s+)?(?:given|shown|provided|have))")
_NOT = r"(?:\s*n['’]t|\s+not)"
# verbs that say the documents lack the answer, unambiguous without a subject
_SAY = r"(?:say|state|specify|mention|tell|indicate|clarify)"
# verbs that need the documents as their subject ("the company does not provide cars" answers)
_HOLD = (r"(?:contain|include|provide|cover|describe|address|discuss|give|list|explain|detail|show|"
         r"answer|offer|reference|define|have|outline|disclose|report|go\s+into|get\s+into|touch\s+on|"
         r"deal\s+with|talk\s+about|speak\s+to|refer\s+to)")
_PART_SAY = r"(?:stated|mentioned|specified|documented|indicated|disclosed)"
_PART_HOLD = r"(?:covered|provided|included|given|listed|described|addressed|found|answered|available|known|discussed|explained|contained)"

# what a response lacks when it declines: "no information", "not any details" (a noun followed by
# the end of its clause or by what it is about: "no information schema", "no data is written" state facts)
_LACK = r"(?:information|info|mention|details?|data|indication|answer|record|knowledge|reference|documentation|entry|section)"
_LACK_END = (r"(?=\s*$|\s*[,.;:!?]|\s+(?:about|on|regarding|concerning|in|of|for|as\s+to|to\s+answer|that\s+(?:would|could|answers?)|"
             r"available|given|provided|here|there|whatsoever|at\s+all|to\s+(?:this|that|it|the|a|an|any|your|such)\b|"
             r"(?:is|are|was|were|can\s+be|could\s+be)\s+(?:given|provided|available|mentioned|stated|known|found|"
             r"retrieved|included|listed)))")
# who declines: "I", "we", or the documents (a thing "cannot see changes": a fact about the thing)
_WHO = rf"(?:^|\b(?:i|we)(?:'m|'re|'ve|'d)?\s+|\b{_DOCS}\b[^.;:!?]{{0,40}}?)"

DECLINE_PATTERNS: tuple[tuple[str, str], ...] = (
    ("documents do not say",
     # "he didn't mention her name" reports a fact: the subject is the documents, a pronoun for them, or none
     rf"(?:^|\b(?:it|they|this|that|which)\s+|\b{_DOCS}\b[^.;:!?]{{0,40}}?)(?P<q>\b(?:do|does|did){_NOT}\s+(?:\w+\s+)?"
     r"(?:say|mention|tell|clarify|state|specify|indicate)\b)"),
    ("documents do not contain", rf"\b{_DOCS}\b[^.;:!?]{{0,40}}?\b(?:do|does|did){_NOT}\s+(?:\w+\s+)?{_HOLD}"),
    ("documents have no", rf"\b{_DOCS}\b[^.;:!?]{{0,40}}?\b(?:has|have|contains?|includes?|gives?|offers?|lacks?)\s+no\b|"
                          rf"\b{_DOCS}\b[^.;:!?]{{0,40}}?\black\b"),
    ("not stated", rf"(?:\bnot|n't)\s+(?:\w+\s+)?{_PART_SAY}\b"),
    ("not in the documents",
     rf"(?:\bnot|n't)\s+(?:anywhere\s+|explicitly\s+)?(?:(?:appear|seem|show\s+up|feature|exist)s?\s+(?:to\s+be\s+)?)?"
     rf"(?:in|within|among|part\s+of)\s+(?:the\s+|any\s+|these\s+|those\s+|my\s+|your\s+)?(?:\w+\s+)?{_DOCS}"),
    ("not covered in the documents",
     rf"(?:\bnot|n't)\s+(?:\w+\s+)?{_PART_HOLD}\s+(?:in|by|within|from|among|anywhere in)\s+(?:the\s+|any\s+|these\s+|those\s+|my\s+|your\s+)?(?:\w+\s+)?{_DOCS}"),
    ("no X is mentioned in the documents",
     rf"^(?:no|nothing)\b[^.;:!?]{{0,40}}?\b(?:is|are|was|were)\s+(?:\w+\s+)?(?:{_PART_SAY}|said)\b|"
     rf"^(?:no|nothing)\b[^.;:!?]{{0,40}}?\b(?:is|are|was|were)\s+(?:\w+\s+)?{_PART_HOLD}\s+(?:in|by|within)\s+"
     rf"(?:the\s+|these\s+|my\s+)?(?:\w+\s+)?{_DOCS}"),
    ("says nothing", r"\bsays?\s+nothing\b|\b(?:is|are)\s+silent\s+(?:on|about|regarding|concerning|as\s+to|with\s+regard\s+to)\b|"
                     r"\bmakes?\s+no\s+(?:mention|reference)\b"),
    ("nothing in the documents",
     rf"\bnothing\s+(?:(?:about|on|regarding|concerning)\s+[^.;:!?]{{0,40}}?\s+)?(?:in|within|from)\s+(?:the\s+|these\s+|my\s+|your\s+)?(?:\w+\s+)?{_DOCS}|"
     r"\bnothing\s+(?:that\s+)?(?:i|we)\s+(?:was\s+|were\s+|have\s+been\s+)(?:given|shown|provided)\b|"
     r"\bnothing\s+(?:that\s+)?(?:i|we)\s+(?:have|found|see|can\s+(?:see|find))\s+(?:mentions?|covers?|says?|addresses|"
     r"discuss\w*|describes?|answers?|talks?\s+about|refers?\s+to)\b"),
    ("none of the documents", rf"\bnone\s+of\s+the\s+(?:\w+\s+)?{_DOCS}|"
                              r"\bnone\s+of\s+(?:them|these|those)\s+(?:\w+\s+)?(?:address|mention|cover|say|discuss|describe|talk)"),
    ("no information", rf"\bno\s+(?:specific\s+|relevant\s+|such\s+|further\s+|other\s+|more\s+)?{_LACK}{_LACK_END}|"
                       rf"\bthere\s+(?:is|are|was|were|does|do|did)(?:n't|\s+not)\s+(?:seem\s+to\s+be\s+|appear\s+to\s+be\s+)?"
                       rf"(?:any\s+)?(?:\w+\s+)?{_LACK}{_LACK_END}"),
    ("not enough information",
     r"\b(?:not\s+enough|insufficient|too\s+little|limited)\s+(?:information|context|details?)\b|"
     r"\b(?:would|'d)\s+need\s+more\s+(?:information|context|details?)\b"),
    ("does not have the information",
     rf"{_WHO}(?P<q>(?:(?:do|does|did){_NOT}\s+have|lack)\s+(?:access\s+to\s+)?"
     rf"(?:any\s+|enough\s+|that\s+|this\s+|the\s+|such\s+|specific\s+|relevant\s+)*(?:(?:information|details?|data|knowledge|answer|"
     r"documentation|docs|sources?)\b|(?:\w+\s+)?(?:information|details?|data)\s+(?:needed|required)))"),
    ("cannot answer",
     r"(?:^|\b(?:i|we)(?:'m|'re|'ve|'d)?\s+(?:\w+\s+)?)(?P<q>(?:can\s*not|can['’]t|could\s*not|couldn['’]t|(?:am|is|are|was|were)\s+(?:not\s+)?unable\s+to|"
     r"(?:am|was|were|'m|'re)(?:n't|\s+not)\s+able\s+to|unable\s+to|not\s+able\s+to)\s+(?:\w+\s+)?(?:answer|find|locate|determine|tell|say|"
     r"confirm|identify|see|help|provide\s+(?:an?\s+|the\s+|that\s+|this\s+|any\s+)?(?:answer|information|details?))\b)|"
     r"\b(?:can\s*not|can['’]t|could\s*not|couldn['’]t)\s+(?:answer|help\s+with)\s+(?:this|that|your|the)\b|"
     r"\b(?:i|we)(?:'m|\s+am|'re|\s+are)\s+not\s+(?:finding|seeing)\b|^not\s+that\s+(?:i|we)\s+(?:can|could)\s+(?:find|see|tell)\b|"
     r"\b(?:is|isn't|is\s+not|'s\s+not)\s+(?:not\s+)?something\s+(?:that\s+)?(?:i|we)\s+(?:can|could)\s+(?:\w+\s+)?(?:answer|find|help|tell|say|see)\b"),
    ("cannot be answered",
     rf"(?:^|\b(?:this|that|it|which|the\s+answer|this\s+question|your\s+question|the\s+question)\s+)"
     r"can(?:not|['’]t)\s+be\s+(?:answered|determined|found|confirmed|established|inferred|known)\b|"
     rf"\bcan(?:not|['’]t)\s+be\s+(?:answered|determined|found|confirmed|established|inferred|known)\s+"
     rf"(?:from|in|with|based\s+on)\s+(?:the\s+|these\s+|this\s+|my\s+)?(?:\w+\s+)?(?:{_DOCS}|information)"),
    ("I don't know", r"\b(?:i|we)\s+(?:do|did)(?:\s*n['’]?t|\s+not)\s+know\b|\bno\s+idea\b|\bnot\s+sure\b|\bnot\s+certain\b|"
                     r"\b(?:i|we)(?:'m|\s+am|'re|\s+are)\s+(?:\w+\s+)?unsure\b"),
    ("not available to me", r"\b(?:information|answer|details?|data)\s+(?:is|are)(?:\s+not|n't)\s+(?:available|known)\b|"
                            r"\bnot\s+available\s+to\s+(?:me|us)\b"),
    ("does not answer the question", rf"\b(?:do|does|did){_NOT}\s+(?:\w+\s+)?answer\s+(?:your|the|this|that)\s+question"),
    ("no way of knowing", r"\bno\s+way\s+(?:of|to)\s+(?:know|knowing|tell|telling|determine|determining|say|saying)\b"),
    ("unclear from the documents",
     rf"\b(?:unclear|not\s+clear)\s+(?:from|in|based\s+on)\s+(?:the\s+|these\s+|this\s+|my\s+)?(?:\w+\s+)?{_DOCS}"),
    ("not something the documents cover",
     rf"\bnot\s+something\s+(?:that\s+)?(?:the\s+|these\s+|my\s+)?(?:\w+\s+)?{_DOCS}\s+(?:\w+\s+)?(?:cover|mention|say|address|discuss|describe|include|contain|answer)"),
    ("outside the documents",
     rf"\b(?:outside|beyond)\s+(?:of\s+)?(?:the\s+)?(?:scope(?:\s*$|\s+(?:here|of\s+(?:this|my|what|the\s+question|(?:the\s+|these\s+|my\s+)?(?:\w+\s+)?{_DOCS}))\b)|"
     rf"what\s+(?:the\s+|these\s+|those\s+|my\s+)?(?:\w+\s+)?(?:{_DOCS}|i|we)\b|my\s+knowledge|(?:the\s+|these\s+|my\s+)?(?:\w+\s+)?{_DOCS}\b)"),
    ("bare", r"^\W*(?:unknown|n/?a|none|not\s+known|not\s+available|not\s+found|no\s+answer|unanswerable|"
             r"cannot\s+answer|cannot\s+be\s+determined|no\s+comment)\W*$"),
)
# "the documents mention X, but not Y": a decline that only reads as one across the contrast
_BUT_NOT = re.compile(
    rf"\b{_DOCS}\b[^.;:!?]*?\b(?:mention|say|cover|describe|discuss|list|include|address|talk\s+about)s?\b"
    r"[^.;:!?]*?,?\s+but\s+not\b", re.I)
# "it does not cover X" after a clause about the documents ("I only have the SQLite documentation,
# and it does not address replication"): "it" is the documents
_THEY_DO_NOT = re.compile(rf"^(?:it|they|these|those|this|that|which)\s+(?:also\s+)?(?:do|does|did){_NOT}\s+(?:\w+\s+)?{_HOLD}",
                          re.I)
_SENTENCE = re.compile(r"(?<=[.;!?])\s+")
_DECLINE = [(name, re.compile(p, re.I)) for name, p in DECLINE_PATTERNS]

REFERRAL = re.compile(
    r"\b(?:ask|contact|check\s+with|reach\s+out|get\s+in\s+touch|consult|speak\s+(?:to|with)|talk\s+to|"
    r"email|e-mail|write\s+to|refer\s+to)\b|\b(?:would|should|could|may|might|can)\s+be\s+(?:able\s+to\s+help|"
    r"the\s+right\s+(?:person|people|team|place))|\bright\s+(?:person|people|team|place)\s+to\s+ask\b", re.I)
META = re.compile(
    rf"^(?:the|these|those|your|my|our|this|that)?\s*(?:[\w-]+\s+(?:and\s+)?){{0,3}}?(?:{_DOCS}|pages?)\b[^.;:!?]*?\b"
    r"(?:covers?|describes?|mentions?|says?|lists?|discuss(?:es)?|explains?|talks?\s+about|refers?\s+to|"
    r"includes?|contains?|focus(?:es)?\s+on|deals?\s+with|(?:is|are)\s+(?:only\s+)?about|only)\b|"
    # what the response has to go on: "I only have the SQLite documentation", "I looked through the passages"
    rf"^(?:i|we)\s+(?:can\s+|could\s+)?(?:only\s+)?(?:have|had|answer|work|go|looked|searched|checked|read|went)\b"
    rf"[^.;:!?]{{0,30}}?\b(?:{_DOCS})\b", re.I)
FILLER = re.compile(r"^(?:answer|response|reply|result|note)\W*$|"
                    r"^(?:i['’]?m\s+|i\s+am\s+|we\s+are\s+)?(?:sorry|unfortunately|apologies|i\s+apologi[sz]e|"
                    r"regrettably|hmm|well|ok(?:ay)?|thanks?(?:\s+you)?|as\s+far\s+as\s+i\s+can\s+(?:tell|see))\W*$",
                    re.I)
# a clause boundary: a sentence end, a semicolon or colon, a dash, or a contrast
_SPLIT = re.compile(r"[.;:!?]+(?:\s+|$)|\s[-–—]\s|,\s+(?=and\b)|,?\s+(?=(?:but|however|although|though|yet|whereas|except\s+that)\b)",
                    re.I)
_CONTRAST_HEAD = re.compile(r"^(?:but|however|although|though|yet|whereas|except\s+that|and)\b[,\s]*", re.I)
# a condition or cause inside a statement: "chage exits with 15 when the shadow file cannot be
# found" states a fact; the decline words describe the condition, not the response
_SUBORDINATE = re.compile(r",?\s+(?:when|whenever|if|unless|until|once|because|since|where|after|before|"
                          r"in\s+case)\b", re.I)

# Function words, to tell an English response from one in another language.
def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_ENGLISH = _wordset("the a an is are was were be not no to of in on at and or it this that there i you we they "
                     "do does did can cannot could have has had with for from by about any what which")
_OTHER = _wordset(
    # German, French, Spanish, Portuguese, Italian, Dutch, Norwegian/Danish/Swedish
    "der die das und ist nicht ein eine zu den dem des sie es ich wir keine kein dazu auch mit auf für "
    "le la les et est pas une des du je nous il elle ce qui que dans pour sur ne "
    "el los las y es no una del que en por para con se lo su sé "
    "o os as é não um uma do da dos das em com na no sei "
    "il lo gli è non un una di che per con sono "
    "de het een en is niet van ik wij zijn er "
    "og er ikke en et det jeg vi på til av som den står har är inte och") - _ENGLISH


@dataclass(frozen=True)
class DeclineSignals:
    """What the phrase detector saw in a response."""

    verdict: str  # "declines": only decline, referral and remarks about the documents;
    #               "mixed": a decline phrase beside other content; "none": no decline phrase;
    #               "not_english": not English (the detector does not read it); "empty"
    matched: tuple[str, ...]  # the names of the patterns that matched
    clauses: tuple[tuple[str, str], ...]  # (kind, text) per clause: decline, referral, meta, filler, content
    quotes: tuple[str, ...] = ()  # the words of the response they matched, in order

    def quoted(self) -> str:
        """The matched words, quoted, for a reason a person reads: '"do not say", "no idea"'."""
        return ", ".join(f'"{q}"' for q in self.quotes) or ", ".join(self.matched)


# Declines in German, French and Spanish (then Portuguese, Italian, Dutch, Chinese, Japanese): the phrases a decline is made of, read after accents are
# folded ("weiß" -> "weiss" is spelt both ways below). A response in these languages declines when
# every clause is such a phrase or an apology; any other clause makes it "mixed" (the judge reads it).
_DE_DOCS = r"(?:dokumente?n?|dokumentation|\w+-dokumentation|unterlagen|texte?n?|quellen?|kontext|handbuch|auszuge?n?|passagen?)"
_FR_DOCS = r"(?:documents?|documentation|textes?|sources?|passages?|extraits?|contexte|manuel|informations?\s+fournies)"
_ES_DOCS = r"(?:documentos?|documentacion|textos?|fuentes?|pasajes?|extractos?|contexto|manual|informacion\s+proporcionada)"
_DOCS_OTHER = (r"(?:dokument\w*|unterlagen|texte?n?|quellen?|kontext|documents?|textes?|sources?|contexte|"
               r"documentos?|textos?|fontes?|contexto|documenti|testi|fonti|documenten|teksten|bronnen|"
               r"context|informationen|informations?|informaciones|informacion|informacao|informacoes|"
               r"informazioni|informatie)")
OTHER_DECLINE_PATTERNS: tuple[tuple[str, str], ...] = (
    ("de: weiss nicht", r"\bwei(?:ss|ß)\s+(?:ich\s+)?(?:es\s+|das\s+)?(?:leider\s+)?nicht\b|\bkeine\s+ahnung\b"),
    ("de: keine angaben",
     r"\bkeine(?:rlei|n)?\s+(?:genauen\s+|naheren\s+|weiteren\s+|konkreten\s+)?(?:angaben?|informationen?|auskunft|"
     r"antwort|hinweise?)\b"),
    ("de: nicht erwahnt",
     r"\bnicht\s+(?:\w+\s+)?(?:erwahnt|angegeben|genannt|beschrieben|aufgefuhrt|beantwortet|dokumentiert|"
     r"bekannt|ersichtlich|zu\s+entnehmen)\b"),
    ("de: kann nicht beantworten",
     r"\b(?:kann|konnen|koennen|konnte)\s+(?:ich\s+|wir\s+)?(?:\w+\s+){0,6}?nicht\s+(?:\w+\s+)?"
     r"(?:beantworten|sagen|finden|feststellen|bestimmen|bestatigen)\b"),
    ("de: die dokumente sagen nichts",
     rf"\bgeht\s+(?:daraus\s+|aus\s+\w+\s+{_DE_DOCS}\s+)?nicht\s+hervor\b|"
     rf"\b{_DE_DOCS}\b[^.;:!?]{{0,40}}?\b(?:sagen|enthalten|erwahnen|nennen|steht|stehen)\s+(?:daruber\s+|dazu\s+)?"
     r"(?:nichts|keine)\b|\bsteht\s+(?:dort\s+|darin\s+|daruber\s+|dazu\s+)*nichts\b"),
    ("de: finde nichts",
     r"\b(?:finde|fand|finden|fanden|sehe)\s+(?:ich\s+|wir\s+)?(?:\w+\s+){0,5}?(?:nichts|keine\w*)\b"),
    ("de: steht nicht in den unterlagen",
     rf"\b(?:steht|stehen|ist|sind|findet\s+sich|finden\s+sich)\s+(?:\w+\s+)?nicht\s+(?:in|im)\s+(?:der|den|dem|meinen|diesen)?\s*"
     rf"(?:\w+\s+)?{_DE_DOCS}\b|"
     rf"\b{_DE_DOCS}\b[^.;:!?]{{0,40}}?\b(?:behandel|erwahn|beschreib|enthal|nenn|deck|geh|sag|beantwort)\w*\b"
     r"[^.;:!?]{0,40}?\bnicht(?:\s+(?:ab|ein|darauf|daruber|dazu))?\s*$"),
    ("fr: je ne sais pas", r"\bje\s+ne\s+(?:le\s+)?sais\s+pas\b|\baucune\s+idee\b"),
    ("fr: aucune information",
     r"\b(?:aucune?|pas\s+(?:assez\s+|suffisamment\s+)?d['e]\s*)\s*(?:\w+\s+)?"
     r"(?:informations?|indications?|precisions?|reponses?|mentions?)\b"),
    ("fr: ne precise pas",
     r"\bne\s+(?:le\s+|l'|la\s+)?(?:mentionnent|mentionne|precisent|precise|disent|dit|indiquent|indique)\s+pas\b|"
     rf"\b{_FR_DOCS}\b[^.;:!?]{{0,40}}?\bne\s+(?:\w+\s+)?(?:contiennent|contient|fournissent|fournit|couvrent|"
     r"couvre|donnent|donne|permettent|permet|parlent|parle|abordent|aborde|traitent|traite)\s+(?:pas|rien)\b|"
     r"\bn['e]\s*(?:est|sont)\s+pas\s+(?:\w+\s+)?(?:mentionnee?s?|precisee?s?|indiquee?s?|specifiee?s?|connue?s?)\b"),
    ("fr: ne peux pas repondre",
     r"\b(?:je\s+)?ne\s+(?:peux|puis|pouvons|peut)\s+pas\s+(?:\w+\s+)?(?:repondre|dire|determiner|trouver|"
     r"confirmer|preciser)\b|\bimpossible\s+de\s+(?:\w+\s+)?(?:repondre|dire|savoir|determiner|trouver)\b"),
    ("fr: rien dans les documents",
     rf"\bne\s+(?:dit|disent|mentionne|mentionnent|precise|precisent|indique|indiquent)\s+rien\b|"
     rf"\brien\s+(?:dans|sur\s+ce\s+point\s+dans)\s+(?:les\s+|le\s+|la\s+|ces\s+|mes\s+)?{_FR_DOCS}"),
    ("fr: hors du cadre",
     r"\b(?:depasse\w*|hors\s+(?:du|de)|en\s+dehors\s+(?:du|de))\s+(?:le\s+)?(?:cadre|champ|perimetre)\b"),
    ("fr: ne trouve pas",
     rf"\bne\s+(?:la\s+|le\s+|l'|les\s+)?(?:trouve|trouvons|vois|voyons)\s+(?:pas|rien)\b[^.;:!?]{{0,40}}?"
     rf"(?:\b(?:information|reponse|mention|trace)|\b(?:dans|parmi)\s+(?:les\s+|la\s+|le\s+|ces\s+|mes\s+)?{_FR_DOCS})"),
    ("es: no lo se", r"\bno\s+lo\s+se\b|\bno\s+se\s*(?:$|[.,!])|\bno\s+se\s+(?:la\s+respuesta|nada)\b|\bni\s+idea\b"),
    ("es: no hay informacion",
     r"\b(?:no\s+(?:tengo|hay|dispongo\s+de|tenemos|encuentro|encontre)|ninguna?)\s+"
     r"(?:suficiente\s+|ninguna?\s+|esa\s+|dicha\s+|mas\s+)?(?:informacion|respuesta|mencion|indicacion)\b"),
    ("es: no se menciona",
     r"\bno\s+(?:se\s+|lo\s+|la\s+)?(?:menciona|mencionan|especifica|especifican|indica|indican|dice|dicen|"
     r"detalla|detallan|precisa|precisan|aclara|aclaran)\b|"
     rf"\b{_ES_DOCS}\b[^.;:!?]{{0,40}}?\bno\s+(?:\w+\s+)?(?:contiene|contienen|incluye|incluyen|proporciona|"
     r"proporcionan|habla|hablan|cubre|cubren|trata|tratan)\b|"
     r"\bno\s+(?:esta|estan)\s+(?:\w+\s+)?(?:especificad[oa]s?|indicad[oa]s?|mencionad[oa]s?|claro)\b"),
    ("es: no encuentro nada",
     rf"\bno\s+(?:encuentro|encontre|he\s+encontrado|hallo|halle|veo)\s+(?:nada|ninguna?)\b|"
     rf"\bno\s+(?:encuentro|encontre|he\s+encontrado|hallo|halle|veo)\b[^.;:!?]{{0,40}}?\b(?:en|dentro\s+de)\s+"
     rf"(?:la\s+|los\s+|las\s+|el\s+|esta\s+|estos\s+|mis\s+)?{_ES_DOCS}\b"),
    ("es: fuera del alcance", r"\bfuera\s+(?:del|de\s+(?:mi|nuestro|su))\s+(?:alcance|ambito)\b"),
    ("es: no puedo responder",
     r"\bno\s+(?:puedo|podemos|es\s+posible|se\s+puede)\s+(?:\w+\s+)?(?:responder|contestar|decir|"
     r"determinar|saber|confirmar|precisar|encontrar)\b"),
    # Portuguese (folded: "nao", "informacao"); Spanish has its own patterns above
    ("pt: nao menciona", r"\bnao\s+(?:se\s+|lo\s+|la\s+|e\s+|esta\s+|estao\s+|fue\s+|foi\s+)?"
                              r"(?:mencion|especific|indic|dic?e|diz|detall|detalh|aparec|encuentr|inclu|informa|"
                              r"consta|figura|aborda|trata)\w*"),
    ("pt: nao ha informacao", r"\bnao\s+(?:tengo|hay|dispongo\s+de|tenemos|tenho|ha|existe|existen|temos)\s+"
                                  r"(?:\w+\s+)?(?:informacion|informaciones|informacao|informacoes|datos|dados|"
                                  r"detalles|detalhes|respuesta|resposta)\b"),
    ("pt: nenhuma informacao", r"\b(?:nenhuma|sem)\s+(?:\w+\s+)?(?:informacion|informacao|"
                                   r"datos|dados|respuesta|resposta)\b"),
    ("pt: nao posso responder", r"\bnao\s+(?:puedo|podemos|posso|podemos|consigo|conseguimos|es\s+posible|"
                                  r"e\s+possivel)\s+(?:\w+\s+)?(?:responder|decir|dizer|saber|determinar|confirmar|"
                                  r"encontrar)\b"),
    # "no sé" ends its clause: "no se permiten mascotas" is an answer
    ("pt: nao sei", r"\bnao\s+(?:lo\s+|o\s+)?(?:se|sei|sabemos)(?:\s+(?:nada|la\s+respuesta|a\s+resposta))?\W*$"),
    ("pt/it: nao esta nos documentos", rf"\bn(?:ao|on)\s+(?:\w+\s+){{1,2}}?(?:en|nos|nas|no|na|nei|nelle|"
                                            rf"negli|in)\s+(?:\w+\s+)?{_DOCS_OTHER}"),
    ("pt: nao encontrei", r"\bnao\s+(?:\w+\s+)?(?:encontre|encontrei|encontramos|hallo|halle)\b"),
    # Italian
    ("it: non menzionato", r"\bnon\s+(?:viene\s+|e\s+|sono\s+|vengono\s+|ne\s+|lo\s+)?(?:menzion|specific|indic|"
                           r"riport|dett|parl|trat|cit|precis|forn|conten)\w*"),
    ("it: nessuna informazione", r"\bnessun[ao]?\s+(?:\w+\s+)?(?:informazion[ei]|dato|dati|dettagli|risposta|"
                                 r"indicazion[ei]|menzione)\b"),
    ("it: non ho informazioni", r"\bnon\s+(?:ho|abbiamo|ci\s+sono|c'e)\s+(?:\w+\s+)?(?:informazion[ei]|dati|"
                                r"dettagli|risposta)\b"),
    ("it: non posso rispondere", r"\bnon\s+(?:posso|possiamo|riesco|riusciamo|e\s+possibile)\s+(?:\w+\s+)?"
                                 r"(?:rispondere|dire|sapere|determinare|confermare|trovare)\b"),
    ("it: non lo so", r"\bnon\s+(?:lo\s+)?(?:so|sappiamo)\b"),
    # Dutch
    ("nl: niet vermeld", r"\b(?:niet|nergens)\s+(?:\w+\s+)?(?:vermeld|genoemd|aangegeven|beschreven|opgenomen|"
                         r"gespecificeerd|te\s+vinden)\b"),
    ("nl: geen informatie", r"\bgeen\s+(?:\w+\s+)?(?:informatie|gegevens|details|antwoord|vermelding)\b"),
    ("nl: kan niet beantwoorden", r"\b(?:kan|kunnen)\s+(?:\w+\s+){0,3}?niet\s+(?:\w+\s+)?(?:beantwoorden|zeggen|"
                                  r"vinden|bepalen|bevestigen)\b"),
    ("nl: vermelden niet", r"\b(?:vermelden|vermeldt|noemen|noemt|bevatten|bevat|zeggen|zegt)\s+(?:\w+\s+){0,3}?"
                           r"(?:niet|niets)\b"),
    ("nl: weet niet", r"\b(?:weet|weten)\s+(?:ik\s+|we\s+|wij\s+)?(?:het\s+|dat\s+)?niet\b"),
    # Chinese
    ("zh: 没有提到", r"(?:没有|没|未|并未|并没有)(?:提到|提及|说明|明确|包含|找到|相关|具体|关于|记载|涉及|给出|列出)"),
    ("zh: 无法回答", r"(?:无法|不能|没法|不可能)(?:回答|确定|找到|判断|提供|得知|知道|确认)"),
    ("zh: 不知道", r"不知道|不清楚|不确定"),
    ("zh: 没有信息", r"(?:没有|无|缺乏|缺少)(?:\w{0,4})(?:信息|资料|数据|答案|内容)"),
    # Japanese
    ("ja: 記載がありません", r"(?:記載|言及|情報|記述|説明|データ)(?:は|が|も)?(?:\w{0,3})?(?:ありません|ない|ございません|"
                             r"されていません|見当たりません|見つかりません)"),
    ("ja: わかりません", r"(?:わかりません|分かりません|分かりかねます|わかりかねます|不明です|存じません)"),
    ("ja: お答えできません", r"(?:回答|お答え|答え|判断|確認)(?:は|が)?(?:でき|いたしかね|しかね)"),
    ("ja: 含まれていません", r"(?:含まれていません|書かれていません|記載されていません|触れられていません)"),
)
_OTHER_DECLINE = [(name, re.compile(p, re.I)) for name, p in OTHER_DECLINE_PATTERNS]
_OTHER_FILLER = re.compile(
    r"^(?:leider|tut\s+mir\s+leid|es\s+tut\s+mir\s+leid|entschuldigung|bedauerlicherweise|"
    r"(?:je\s+suis\s+)?desolee?|malheureusement|pardon|"
    r"lo\s+siento|lo\s+lamento|lamentablemente|desafortunadamente|perdon|disculpe?|"
    r"desculpe|infelizmente|lamento|mi\s+dispiace|purtroppo|spiacente|scusa(?:te)?|helaas|het\s+spijt\s+me|"
    r"抱歉|对不起|很遗憾|不好意思|遗憾的是|申し訳(?:ありません|ございません)(?:が)?|すみません(?:が)?|残念ながら)\W*$", re.I)
# a Latin stop ends a clause before a space or the end (not the point of "6.0"); a CJK one anywhere
_OTHER_SPLIT = re.compile(r"[.;:!?]+(?:\s+|$)|[。；：！？，、]+\s*|\s[-–—]\s|"
                          r",?\s+(?=(?:aber|jedoch|mais|cependant|pero|sin\s+embargo|porem|contudo|tuttavia|maar)\b)",
                          re.I)


def _fold_accents(text: str) -> str:
    """Latin accents dropped ("weiß" stays, "é" -> "e"); Chinese and Japanese kept as they are
    (NFKD would strip the voicing marks of kana: "ございません" -> "こさいません")."""
    if text.isascii():
        return text
    return "".join(ch if ord(ch) >= 0x2E80 else
                   "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
                   for ch in text)


def _folded_with_map(text: str) -> tuple[str, list[int]]:
    """:func:`_fold_accents` of the text, and for each folded character (and the end) the index
    of the character of ``text`` it came from: the patterns read the folded text, a person reads
    the words as written ("ne précisent pas", not "ne precisent pas")."""
    pieces: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        piece = _fold_accents(ch)
        pieces.append(piece)
        where.extend([i] * len(piece))
    where.append(len(text))
    return "".join(pieces), where


def _detect_other(text: str) -> DeclineSignals:
    """The detector for a response in German, French, Spanish, Portuguese, Italian, Dutch,
    Chinese or Japanese (see OTHER_DECLINE_PATTERNS)."""
    clauses: list[tuple[str, str]] = []
    matched: list[str] = []
    quotes: list[str] = []
    folded, where = _folded_with_map(text)

    def written(a: int, b: int) -> str:
        return text[where[a]:where[b]].strip()

    pos = 0
    for raw in _OTHER_SPLIT.split(folded):
        start = folded.find(raw, pos)
        pos = start + len(raw)
        clause = raw.strip(" ,")
        if not clause:
            continue
        at = start + raw.index(clause)
        found = [(name, written(at + m.start(), at + m.end())) for name, rx in _OTHER_DECLINE
                 if (m := rx.search(clause))]
        hits = [name for name, _ in found]
        as_written = written(at, at + len(clause))
        if hits:
            matched.extend(h for h in hits if h not in matched)
            quotes.extend(q for _, q in found if q not in quotes)
            clauses.append(("decline", as_written))
        elif _OTHER_FILLER.match(clause):
            clauses.append(("filler", as_written))
        else:
            clauses.append(("content", as_written))
    kinds = {k for k, _ in clauses}
    if "decline" not in kinds:
        return DeclineSignals("not_english", (), ())
    return DeclineSignals("mixed" if "content" in kinds else "declines", tuple(matched), tuple(clauses),
                          tuple(quotes))


def _quote(m: re.Match[str]) -> str:
    """The words a pattern matched, without the subject it needed to see ("do not say", not
    "documents do not say")."""
    return (m.group("q") if "q" in m.re.groupindex and m.group("q") else m.group(0)).strip()


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W\d_]+", text.lower())


def is_english(text: str) -> bool:
    words = _words(text)
    en = sum(1 for w in words if w in _ENGLISH)
    other = sum(1 for w in words if w in _OTHER)
    return not (other > en)


def _in_condition(clause: str) -> bool:
    """Whether every decline phrase of ``clause`` lies in a condition or cause that follows a
    statement ("X exits with 3 when the file cannot be found"), not in the clause's own verb
    ("I cannot say when it opens" declines)."""
    sub = _SUBORDINATE.search(clause)
    if sub is None:
        return False
    head = clause[: sub.start()].strip(" ,")
    if not head or FILLER.match(head) or any(rx.search(head) for _, rx in _DECLINE):
        return False
    return len(_words(head)) >= 3


@functools.lru_cache(maxsize=2048)
def detect_declines(response: str) -> DeclineSignals:
    """The phrase detector: patterns of a decline, read clause by clause (English; German, French,
    Spanish, Portuguese, Italian, Dutch, Chinese and Japanese by a shorter list,
    :data:`OTHER_DECLINE_PATTERNS`; another language: ``not_english``). A pure function of the
    text, remembered for the last 2,048 texts: a run asks it of each response several times
    (faithfulness, answer relevancy, abstention)."""
    text = response.replace("’", "'").strip()
    if not text:
        return DeclineSignals("empty", (), ())
    if not is_english(text):
        return _detect_other(text)
    clauses: list[tuple[str, str]] = []
    matched: list[str] = []
    quotes: list[str] = []
    pieces: list[tuple[str, bool]] = []
    for sentence in _SENTENCE.split(text):
        if _BUT_NOT.search(sentence):
            pieces.append((sentence, True))
        else:
            pieces.extend((p, False) for p in _SPLIT.split(sentence))
    for raw, but_not in pieces:
        clause = _CONTRAST_HEAD.sub("", raw.strip()).strip(" ,")
        if not clause:
            continue
        found = ([("mentions X but not Y", clause)] if but_not else
                 [(name, _quote(m)) for name, rx in _DECLINE if (m := rx.search(clause))])
        if found and not but_not and _in_condition(clause):
            found = []
        if not found and clauses and clauses[-1][0] in ("meta", "decline") and (m := _THEY_DO_NOT.search(clause)):
            found = [("the documents do not contain", m.group(0).strip())]
        hits = [name for name, _ in found]
        if hits:
            kind = "decline"
            matched.extend(h for h in hits if h not in matched)
            quotes.extend(q for _, q in found if q not in quotes)
        elif FILLER.match(clause):
            kind = "filler"
        elif REFERRAL.search(clause):
            kind = "referral"
        elif META.search(clause):
            kind = "meta"
        else:
            kind = "content"
        clauses.append((kind, clause))
    kinds = {k for k, _ in clauses}
    if "decline" not in kinds:
        # a short Spanish or French text can read as English by its function words ("no", "a")
        other = _detect_other(text)
        if other.verdict != "not_english":
            return other
        verdict = "none"
    elif "content" in kinds:
        verdict = "mixed"
    else:
        verdict = "declines"
    return DeclineSignals(verdict, tuple(matched), tuple(clauses), tuple(quotes))
