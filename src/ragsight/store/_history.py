"""A conversation's messages stored once per run: its turns' records refer to them.

A turn of a conversation carries the messages before it (``Sample.history``), so the turns of a
conversation of n messages hold about n²/4 messages in all: stored one by one, a 2,000-message
chat (200 kB) made 41 MB of sample records. When a run is created, the longest history of each
conversation (its conversation-level sample's: every message) is stored once, as one text (the
JSON list of its messages, compressed in its pack like every text), and each sample of the
conversation whose history begins with it stores ``"history": {"$h": [text id, count]}``: the
first ``count`` messages of that text. A ``history`` that is not such a prefix is stored whole, as
before. Only the top-level ``history`` of a sample record is read this way (a sample's own
``history`` is a list or null, never an object), so older records read as they always did.

Reading parses a conversation's text once and keeps it for the next samples of the conversation
(:class:`HistoryReader`): the turns of one conversation share their message objects, and reading
every turn costs one parse, not one per turn.
"""

from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..dataset import History, Sample, Turn, sample_from_mapping, strict_json
from ._texts import PackWriter, TextStore

__all__ = ["HistoryReader", "HistoryWriter"]

_REF = "$h"
_KEPT = 8  # parsed conversations a reader keeps


class HistoryWriter:
    """The fields of a run's samples as the samples table keeps them, each conversation's
    messages stored once (module docstring)."""

    def __init__(self, samples: Sequence[Sample]) -> None:
        self.longest: dict[str, Sequence[Turn]] = {}
        for s in samples:
            if s.conversation_id is not None and s.history and \
                    len(s.history) > len(self.longest.get(s.conversation_id, ())):
                self.longest[s.conversation_id] = s.history
        self._texts: dict[str, str] = {}

    def fields(self, s: Sample, w: PackWriter) -> dict[str, Any]:
        """``s.to_dict()``, its history as a reference when it begins its conversation's longest."""
        full = self.longest.get(s.conversation_id) if s.conversation_id is not None else None
        history = s.history
        if not history or full is None or len(history) > len(full) or history != full[:len(history)]:
            return s.to_dict()
        out = dataclasses.replace(s, history=()).to_dict()  # the messages are not converted per turn
        cid = s.conversation_id
        assert cid is not None
        if cid not in self._texts:
            self._texts[cid] = strict_json([t.to_dict() for t in full], separators=(",", ":"))
        out["history"] = {_REF: [w.ref(self._texts[cid]), len(history)]}
        return out


class HistoryReader:
    """Sample records read back, their shared histories parsed once (see the module docstring)."""

    def __init__(self, texts: TextStore) -> None:
        self.texts = texts
        self._parsed: OrderedDict[int, tuple[Turn, ...]] = OrderedDict()

    def sample(self, data: str) -> Sample:
        raw = self.texts.decode_json(data)
        ref = raw.get("history") if isinstance(raw, dict) else None
        if not (isinstance(ref, dict) and len(ref) == 1 and _REF in ref):
            return sample_from_mapping(raw)[0]
        tid, count = ref[_REF]
        raw["history"] = []  # a turn (or a conversation) with its messages set below
        sample = sample_from_mapping(raw)[0]
        return dataclasses.replace(sample, history=History(self._turns(int(tid)), int(count)))

    def _turns(self, tid: int) -> tuple[Turn, ...]:
        turns = self._parsed.get(tid)
        if turns is None:
            messages = json.loads(self.texts.get(tid))
            turns = tuple(sample_from_mapping({"id": "history", "conversation_id": "history", "turn": 0,
                                               "history": messages})[0].history or ())
            self._parsed[tid] = turns
            while len(self._parsed) > _KEPT:
                self._parsed.popitem(last=False)
        else:
            self._parsed.move_to_end(tid)
        return turns
