"""Entities (context entity recall): the named entities of the reference or of the joined
contexts, with their normalised forms. One JSON step for every judge."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..calls import fit_for_judge
from ..prompts import fence, load_prompt
from ._text import normalise_entity
from ._types import EntityList, list_of_str, refs

if TYPE_CHECKING:
    from ._sample import SampleAnalyses

__all__ = ["extract"]


async def extract(sa: SampleAnalyses, source: str) -> EntityList:
    judge = sa.need_judge()
    s = sa.sample
    text = s.reference_text if source == "reference" else "\n\n".join(s.contexts or ())
    text = fit_for_judge(judge, [text or ""], field=source, output_tokens=512,
                         record=sa.truncations)[0]
    ans = await judge.ask(
        load_prompt("extract_entities"),
        {"text": fence("text", text or ""), "raw_text": text or "", "source": source},
        lambda d: list_of_str(d, "entities"), max_tokens=512, use_cache=sa.settings.use_cache,
    )
    ents = tuple(dict.fromkeys(ans.value))
    normed = frozenset(n for n in (normalise_entity(e) for e in ents) if n)
    return EntityList(source, ents, normed, refs(ans))
