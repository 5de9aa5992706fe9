"""Versioned prompt templates, one file per judge step.

A template file ``<id>.txt`` has a header (``id:``, ``version:``, optional ``count:`` naming the
output array whose length is fixed per call) and two sections, ``=== system`` and ``=== user``.
Placeholders are ``{{name}}``. The output schema is ``<id>.json`` beside it. The prompt's hash
covers the template and the schema; it is recorded with every judge call and is part of the cache
key, so editing a prompt never serves stale cached verdicts.

Untrusted text (questions, contexts, responses, references) is inserted through :func:`fence`,
which wraps it in a tag and neutralises anything inside that looks like one of our delimiters, so a
context cannot close its own block and speak as the instructions.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ._instructions import REMOVED, instructions_in, remove_instructions

__all__ = ["DELIMITER_TAGS", "REMOVED", "Message", "Prompt", "fence", "instructions_in", "load_prompt", "load_prompt_file",
           "neutralise", "prompt_ids", "remove_instructions"]

# Tags used to delimit untrusted text in our prompts.
DELIMITER_TAGS = (
    "question", "context", "contexts", "response", "reference", "text", "claims", "claim",
    "sentences", "chunk", "document", "criteria", "data", "conversation", "role",
)
_TAG_RE = re.compile(r"<\s*(/?)\s*(" + "|".join(DELIMITER_TAGS) + r")\b([^>]*)>", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_][a-z0-9_]*)\s*\}\}")


@dataclass(frozen=True)
class Message:
    """One chat message of a rendered prompt."""

    role: str  # "system" | "user" | "assistant"
    content: str


_SPECIAL_RE = re.compile(r"<\|\s*([^|<>]{0,40}?)\s*\|>")


def neutralise(text: str) -> str:
    """Make delimiter-like tags inside untrusted text inert: ``</context>`` -> ``[/context]``,
    and chat-template special tokens (``<|im_start|>``, ``<|endoftext|>``) -> ``(im_start)``, so
    a context can neither close its block nor open a new chat turn in the embedded judge; and
    text that addresses the evaluator (an instruction, a fake verdict: :mod:`._instructions`) is
    replaced by a marker, since it is not evidence of anything."""
    text = _SPECIAL_RE.sub(lambda m: f"({m.group(1)})", text)
    text = _TAG_RE.sub(lambda m: f"[{m.group(1)}{m.group(2)}{m.group(3)}]", text)
    return remove_instructions(text)


def fence(tag: str, text: str, **attrs: str | int) -> str:
    """Wrap untrusted text in ``<tag ...>`` ... ``</tag>`` after neutralising delimiters in it."""
    attr = "".join(f' {k}="{v}"' for k, v in attrs.items())
    return f"<{tag}{attr}>\n{neutralise(text.strip())}\n</{tag}>"


@dataclass(frozen=True)
class Prompt:
    id: str
    version: str
    system: str
    user: str
    schema: dict[str, Any] | None
    count_field: str | None = None

    @functools.cached_property
    def hash(self) -> str:
        basis = json.dumps(
            {"system": self.system, "user": self.user, "schema": self.schema}, sort_keys=True
        )
        return hashlib.sha256(basis.encode()).hexdigest()[:16]

    def render(self, **values: str) -> tuple[Message, ...]:
        """Fill the placeholders. Values are inserted as given: fence untrusted text first."""
        return (
            Message("system", self._fill(self.system, values)),
            Message("user", self._fill(self.user, values)),
        )

    def schema_for(self, count: int | None = None) -> dict[str, Any] | None:
        """The output schema, with the expected array length stated when ``count`` is given."""
        if self.schema is None:
            return None
        schema = copy.deepcopy(self.schema)
        if count is not None and self.count_field:
            arr = schema["properties"][self.count_field]
            arr["minItems"] = count
            arr["maxItems"] = count
        return schema

    def _fill(self, template: str, values: dict[str, str]) -> str:
        def sub(m: re.Match[str]) -> str:
            name = m.group(1)
            if name not in values:
                raise KeyError(f"prompt {self.id} v{self.version} needs a value for '{name}'")
            return values[name]

        return _PLACEHOLDER.sub(sub, template).strip()

    def with_examples(self, block: str, tag: str) -> Prompt:
        """A variant of this prompt with ``block`` (worked examples, their untrusted text already
        fenced) appended to its system message, versioned ``<version>+<tag>``: its hash, and so
        every cache key and recorded call, names the variant. ``block`` empty: this prompt."""
        if not block.strip():
            return self
        return Prompt(self.id, f"{self.version}+{tag}", f"{self.system}\n\n{block.strip()}", self.user,
                      self.schema, self.count_field)

    def placeholders(self) -> set[str]:
        return set(_PLACEHOLDER.findall(self.system)) | set(_PLACEHOLDER.findall(self.user))


def _parse(text: str, schema: dict[str, Any] | None) -> Prompt:
    header, _, body = text.partition("\n=== system\n")
    meta: dict[str, str] = {}
    for line in header.splitlines():
        if ":" in line and not line.startswith("#"):
            k, _, v = line.partition(":")
            meta[k.strip()] = v.strip()
    system, _, user = body.partition("\n=== user\n")
    if not user:
        raise ValueError(f"prompt {meta.get('id')}: missing '=== system' or '=== user' section")
    return Prompt(
        id=meta["id"],
        version=meta["version"],
        system=system.strip(),
        user=user.strip(),
        schema=schema,
        count_field=meta.get("count") or None,
    )


def load_prompt_file(path: str | os.PathLike[str]) -> Prompt:
    """Load a prompt template from a file outside the package (its schema, if any, is the
    ``.json`` beside it). The benchmarks keep their probe prompts this way."""
    txt = Path(path)
    schema_file = txt.with_suffix(".json")
    schema = json.loads(schema_file.read_text("utf-8")) if schema_file.is_file() else None
    prompt = _parse(txt.read_text("utf-8"), schema)
    if prompt.id != txt.stem:
        raise ValueError(f"{txt.name} declares id '{prompt.id}'")
    return prompt


@functools.cache
def load_prompt(prompt_id: str) -> Prompt:
    """Load a packaged prompt by id (e.g. ``"extract_claims"``)."""
    base = resources.files(__name__)
    txt = base.joinpath(f"{prompt_id}.txt")
    if not txt.is_file():
        raise KeyError(f"no prompt named '{prompt_id}'; known: {', '.join(prompt_ids())}")
    schema_file = base.joinpath(f"{prompt_id}.json")
    schema = json.loads(schema_file.read_text("utf-8")) if schema_file.is_file() else None
    prompt = _parse(txt.read_text("utf-8"), schema)
    if prompt.id != prompt_id:
        raise ValueError(f"{prompt_id}.txt declares id '{prompt.id}'")
    return prompt


def prompt_ids() -> list[str]:
    base = resources.files(__name__)
    return sorted(p.name[:-4] for p in base.iterdir() if p.name.endswith(".txt"))
