"""Claims: a text (the response or the reference) decomposed into short, self-contained claims.

One generation step for every judge (remote or embedded): ``extract_claims`` returns a JSON list,
at most ``AnalysisSettings.max_claims`` long; repeats are dropped in order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._budget import fit_for_judge
from ..errors import OutputError
from ..prompts import fence, load_prompt
from ._types import ClaimList, list_of_str, refs

if TYPE_CHECKING:
    from ._sample import SampleAnalyses

__all__ = ["extract"]


async def extract(sa: SampleAnalyses, source: str) -> ClaimList:
    judge = sa.need_judge()
    text = sa.sample.response if source == "response" else sa.sample.reference_text
    assert text is not None
    question = fence("question", sa.sample.question) if sa.sample.question else ""
    limit = sa.settings.max_claims
    text = fit_for_judge(judge, [text], field=source, output_tokens=1024, alongside=[question],
                         record=sa.truncations)[0]

    def validate(d: dict[str, Any]) -> list[str]:
        claims = list_of_str(d, "claims")
        if len(claims) > limit:
            raise OutputError(f"too many claims ({len(claims)}); give at most {limit}")
        return claims

    ans = await judge.ask(
        load_prompt("extract_claims"),
        {"question": question, "text": fence(source, text), "raw_text": text},
        validate, max_tokens=1024, use_cache=sa.settings.use_cache,
    )
    return ClaimList(source, tuple(dict.fromkeys(ans.value)), refs(ans))
