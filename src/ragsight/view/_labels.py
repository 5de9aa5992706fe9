"""Labels in the viewer: read a run's labels for its pages, and write the one a person gives,
checked against the run it names, through the store's label API (``Store.labels``,
``Store.add_labels``, ``Store.delete_label``).

A label request (``POST /api/labels``, JSON)::

    {"run": RUN, "sample": SAMPLE_ID, "metric": METRIC, "claim": N or null, "value": 1, 0 or null,
     "who": NAME}

``claim`` is the claim's position in the metric's evidence on that sample (0-based), or null for
the sample label; ``value`` 1 says the verdict is right (the sample passes), 0 wrong (fails),
null removes this person's label. The store keeps the label by the sample's content and the
claim's text (so it holds for every run of the same data), with who and when.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._score import Score
from ..errors import InputError
from ..store import Label, Store, claim_key, name_problem
from ._model import RunTable
from ._parts import LabelView

__all__ = ["FIELD", "LabelWriter", "read_labels"]

FIELD = "human"
"""The label field the viewer writes and shows (``calibrate --label human`` reads it)."""

MAX_NAME = 80


def read_labels(store: Store, run_id: str, field: str = FIELD) -> tuple[LabelView, list[Label]]:
    """The run's labels of ``field`` (by content: labels given on another run of the same data
    count), per sample id and (metric, claim key or None), and as the store gives them. Only the
    run's labels are read, never the store's others (a store of many data sets may hold hundreds
    of thousands: reading them all to learn whether there was any took 4 s a page)."""
    view = LabelView(enabled=True)
    found = store.labels(run_id, field=field)
    for lb in found:
        if lb.sample_id is None:
            continue
        who = view.by_sample.setdefault(lb.sample_id, {}).setdefault((lb.metric, lb.claim), {})
        who[lb.who] = lb.value
    return view, found


class LabelWriter:
    def __init__(self, store: Store, field: str = FIELD) -> None:
        self.store = store
        self.field = field
        self._keys: dict[str, tuple[float, dict[str, str]]] = {}

    def _key(self, run_id: str, created_at: float, sample_id: str) -> str:
        """The content key the store keeps for the sample (the store's keys of a run, read once
        per run: a run's samples do not change)."""
        cached = self._keys.get(run_id)
        if cached is None or cached[0] != created_at:
            cached = self._keys[run_id] = (created_at, self.store.sample_keys(run_id))
        return cached[1][sample_id]

    @staticmethod
    def claim_keys(scores: Iterable[Score]) -> dict[str, str]:
        """Claim text -> the key its labels are stored under."""
        return {cv.claim: claim_key(cv.claim) for s in scores for cv in s.evidence.claims}

    def write(self, data: Mapping[str, Any], table_of: Callable[[str], RunTable]) -> str:
        """Store (or remove) one label from a request's JSON; a message saying what was stored.
        Raises InputError naming the field that is wrong."""
        unknown = set(data) - {"run", "sample", "metric", "claim", "value", "who"}
        if unknown:
            raise InputError(f"unknown field(s) in the label: {', '.join(sorted(unknown))}")
        for name in ("run", "sample", "metric", "who"):
            if not isinstance(data.get(name), str) or not data[name].strip():
                raise InputError(f"'{name}' must be a non-empty text")
        who = data["who"].strip()
        if len(who) > MAX_NAME:
            raise InputError(f"'who' must be a name of at most {MAX_NAME} characters")
        why = name_problem(who)
        if why is not None:
            raise InputError(f"'who' {why}")
        run_id = self.store.resolve_run(data["run"])
        if run_id != data["run"]:
            raise InputError(f"'run' must be a run's whole id, not '{data['run']}'")
        table = table_of(run_id)
        sid, metric = data["sample"], data["metric"]
        if sid not in table.position:
            raise InputError(f"run {run_id} has no sample '{sid}'")
        if metric not in table.values:
            raise InputError(f"run {run_id} has no metric '{metric}' (it has {', '.join(table.metrics)})")
        value = data.get("value")
        if value is not None and (isinstance(value, bool) or value not in (0, 1)):
            raise InputError("'value' must be 1 (right), 0 (wrong) or null (remove the label)")
        claim = data.get("claim")
        ckey: str | None = None
        what = f"{metric} of sample {sid}"
        if claim is not None:
            if isinstance(claim, bool) or not isinstance(claim, int):
                raise InputError("'claim' must be the claim's position (0, 1, ...) or null")
            score = self.store.scores(run_id, sid).get(sid, {}).get(metric)
            claims = score.evidence.claims if score is not None else ()
            if not 0 <= claim < len(claims):
                raise InputError(f"{what} has {len(claims)} claim(s); there is no claim {claim}")
            ckey = claim_key(claims[claim].claim)
            what = f"claim {claim + 1} of {what}"
        key = self._key(run_id, table.info.created_at, sid)
        if value is None:
            gone = self.store.delete_label(key, metric, claim=ckey, field=self.field, who=who)
            return f"removed {who}'s label of {what}" if gone else f"{who} had no label of {what}"
        self.store.add_labels([Label(key, metric, float(value), self.field, ckey, who, "", run_id, sid)])
        verdict = ("right" if value else "wrong") if ckey is not None else ("pass" if value else "fail")
        return f"saved: {what} is {verdict} ({who})"
