"""The value rules: each field's value, in the shapes other tools write, checked and coerced.

Contexts may be a list of strings, one string (one chunk), a list of objects with the
text under ``page_content`` / ``text`` / ``content`` / ``document.content`` (LangChain, LlamaIndex,
OpenInference dicts) or real objects with those attributes (duck-typed: ``page_content``,
``node.get_content()``, ``get_content()``, ``text``), or a string holding a JSON array or a
Python list literal (``['a', 'b']`` as pandas and ragas write lists into CSV; read with
``ast.literal_eval``, never ``eval``), or a list of LangChain / LlamaIndex objects as ``str()``
prints it (``[Document(id='d1', page_content='...')]``, what ``df.to_csv()`` writes; their text
and id read from the syntax tree, never run). When every chunk carries an id, the ids become
``retrieved_ids`` (``relevant_ids`` for reference contexts) unless those are given.

Ids (``id``, ``retrieved_ids``, ``relevant_ids``) follow one rule: text is kept with surrounding
spaces removed; an integer is written in decimal; a float with an integral value is written as
that integer (``2.0`` -> ``"2"``: Parquet stores an integer column with a null as floats); any
other finite float as Python writes it (``2.5``); NaN, infinity, booleans and nulls inside a list
are refused with a row problem naming the field.
"""

from __future__ import annotations

import ast
import io
import json
import math
import re
import tokenize
from collections.abc import Mapping
from typing import Any

from ._shapes import FieldError, is_missing, row_mapping, to_plain

__all__ = ["chunks", "ids", "metadata", "norm_id", "parse_text_value", "reference", "relevant", "text"]

_TEXT_KEYS = ("page_content", "text", "content", "document.content")
_ID_KEYS = ("id", "id_", "node_id", "doc_id", "chunk_id", "document.id")
_LISTISH = re.compile(r"^\[\s*(?:[\"'{\]]|$)")
# a list of LangChain / LlamaIndex objects as str() writes it (pandas writes a cell so into CSV)
_REPR_LIST = re.compile(r"^\[\s*(?:Document|NodeWithScore|TextNode|Node|ImageNode|IndexNode)\(")
_REPR_TEXT = ("page_content", "text")
_REPR_ID = ("id", "id_")


def parse_text_value(text: str) -> Any:
    """A JSON value, or a Python literal (as pandas and ragas write lists into CSV), from text;
    raises ValueError when it is neither. Never evaluates code."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        first = f"{exc.msg} at character {exc.pos}"
    except (RecursionError, ValueError) as exc:
        first = str(exc) or type(exc).__name__
    strings = _numpy_strings(text)
    if strings is not None:
        return strings
    try:
        return ast.literal_eval(text)
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        raise ValueError(first) from None


def _numpy_strings(text: str) -> list[str] | None:
    """``['a' 'b']``, a numpy array of strings as ``str()`` writes it (Hugging Face
    ``datasets`` writes list columns so into CSV): the items, or None when the text is not that.
    Python would read it as one concatenated string, silently: never let it."""
    try:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
                if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.INDENT,
                                  tokenize.DEDENT)]
    except (tokenize.TokenError, SyntaxError):
        return None
    if len(toks) < 4 or toks[0].string != "[" or toks[-1].string != "]":
        return None
    inner = toks[1:-1]
    if not all(t.type == tokenize.STRING for t in inner):
        return None  # commas, numbers, "...": a Python list, or not a list of strings at all
    try:
        items = [ast.literal_eval(t.string) for t in inner]
    except (SyntaxError, ValueError):
        return None
    return items if all(isinstance(i, str) for i in items) else None


def text(name: str, value: Any) -> str | None:
    value = to_plain(value)
    if is_missing(value):
        return None
    if isinstance(value, bool):
        raise FieldError(name, f"expected text, got bool. Give '{name}' as a string.")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and math.isinf(value):
            raise FieldError(name, f"'{name}' is infinite; give it as a string.")
        return str(value)
    if not isinstance(value, str):
        raise FieldError(name, f"expected text, got {type(value).__name__}. Give '{name}' as a string.")
    return value


def norm_id(name: str, value: Any) -> str:
    """One id by the documented rule (see the module docstring)."""
    value = to_plain(value)
    if isinstance(value, str):
        out = value.strip()
        if not out:
            raise FieldError(name, f"'{name}' holds an empty id; every id must be non-empty text or a number.")
        return out
    if isinstance(value, bool) or value is None:
        raise FieldError(name, f"'{name}' holds {value!r}, not an id; give ids as text or numbers.")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FieldError(name, f"'{name}' holds {value!r}, not an id: a null or non-finite number (Parquet "
                             "writes a missing id in a list of integers as NaN). Remove it or give every id.")
        return str(int(value)) if value.is_integer() else repr(value)
    raise FieldError(name, f"'{name}' holds a {type(value).__name__}, not an id; give ids as text or numbers.")


def ids(name: str, value: Any) -> tuple[str, ...] | None:
    value = to_plain(value)
    if is_missing(value):
        return None
    if isinstance(value, str):
        s = value.strip()
        if not s:
            return None
        if s.startswith("["):
            try:
                value = parse_text_value(s)
            except ValueError as exc:
                raise FieldError(name, f"the text starts like a list but does not parse ({exc}). Write it as a "
                                 'JSON array, e.g. ["d1", "d2"].') from None
        else:
            raise FieldError(name, f"'{name}' is one string; give a list of ids, e.g. [\"d1\", \"d2\"].")
    if not isinstance(value, (list, tuple)):
        raise FieldError(name, f"expected a list of ids, got {type(value).__name__}.")
    out = []
    for i, item in enumerate(value):
        try:
            out.append(norm_id(name, item))
        except FieldError as exc:
            raise FieldError(name, f"item {i}: {exc.message}") from None
    return tuple(out)


def _chunk(name: str, i: int, item: Any) -> tuple[str, str | None]:
    """One chunk as (text, id or None): text, a dict of a known shape, or a document object."""
    item = to_plain(item)
    if isinstance(item, str):
        return item, None
    if isinstance(item, Mapping):
        node = item.get("node")
        if isinstance(node, Mapping):  # LlamaIndex NodeWithScore as a dict
            return _chunk(name, i, node)
        for key in _TEXT_KEYS:
            if isinstance(item.get(key), str):
                found = next((item[k] for k in _ID_KEYS if not is_missing(item.get(k))), None)
                return item[key], (None if found is None else norm_id(name, found))
        keys = ", ".join(f"'{k}'" for k in list(item)[:6])
        raise FieldError(name, f"item {i} is an object with no text ({keys}); give each chunk as text, or as an "
                         'object with "text" or "page_content" (and optionally "id").')
    if isinstance(item, (int, float, bool, list, tuple)) or item is None:
        raise FieldError(name, f"item {i} is {type(item).__name__}, not a string. Every item must be text.")
    # objects, duck-typed: LangChain Document, LlamaIndex NodeWithScore / TextNode
    page = getattr(item, "page_content", None)
    if isinstance(page, str):
        return page, _opt_id(name, getattr(item, "id", None))
    node = getattr(item, "node", None)
    if node is not None and callable(getattr(node, "get_content", None)):
        return str(node.get_content()), _opt_id(name, getattr(node, "node_id", None))
    if callable(getattr(item, "get_content", None)):
        return str(item.get_content()), _opt_id(name, getattr(item, "node_id", None))
    txt = getattr(item, "text", None)
    if isinstance(txt, str):
        return txt, _opt_id(name, getattr(item, "id", None))
    as_map = row_mapping(item)
    if as_map is not None:
        return _chunk(name, i, as_map)
    raise FieldError(name, f"item {i} is a {type(item).__name__}, not text or a document with page_content/text.")


def _opt_id(name: str, value: Any) -> str | None:
    return None if is_missing(value) else norm_id(name, value)


def chunks(name: str, value: Any, split: str | None = None) -> tuple[tuple[str, ...], tuple[str, ...] | None] | None:
    """Contexts in any of the shapes of the module docstring: (texts, ids when every chunk has
    one). ``split``: a separator for a context given as one string (DeepEval's ``|``)."""
    value = to_plain(value)
    if is_missing(value):
        return None
    if isinstance(value, str):
        s = value.strip()
        if not s:
            return None
        if _LISTISH.match(s):
            try:
                value = parse_text_value(s)
            except ValueError as exc:
                raise FieldError(name, f"the text starts like a list but does not parse ({exc}). Write it as a "
                                 'JSON array of strings, e.g. ["first chunk", "second chunk"].') from None
            if not isinstance(value, list):
                raise FieldError(name, f"the text parses as {type(value).__name__}, not a list of chunks.")
        elif _REPR_LIST.match(s):
            value = _object_reprs(name, s)
        elif split is not None:
            value = value.split(split)
        else:
            return (value,), None
    if isinstance(value, Mapping) or not isinstance(value, (list, tuple)):
        if isinstance(value, (int, float, bool)):
            raise FieldError(name, f"expected a list of strings, got {type(value).__name__}. Give '{name}' as a "
                             'list of strings, e.g. ["chunk one", "chunk two"].')
        value = [value]  # one chunk object
    texts: list[str] = []
    found: list[str | None] = []
    for i, item in enumerate(value):
        t, cid = _chunk(name, i, item)
        texts.append(t)
        found.append(cid)
    all_ids = tuple(c for c in found if c is not None)
    return tuple(texts), (all_ids if texts and len(all_ids) == len(texts) else None)


def _object_reprs(name: str, text: str) -> list[dict[str, Any]]:
    """``[Document(id='d1', metadata={...}, page_content='...')]`` or ``[NodeWithScore(node=
    TextNode(id_='n1', ..., text='...'), score=0.8)]``, as ``str()`` of a list of LangChain or
    LlamaIndex objects writes them (a DataFrame cell written to CSV): each chunk's text and id,
    read from the syntax tree with ``ast.literal_eval`` on those two values only, never run."""
    try:
        tree = ast.parse(_without_enum_reprs(text), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError, tokenize.TokenError):
        tree = None
    items = [_object_repr(e) for e in tree.elts] if isinstance(tree, ast.List) else [None]
    if any(item is None for item in items):
        raise FieldError(name, "the text is a list of LangChain / LlamaIndex objects as Python prints them "
                         "(Document(...), NodeWithScore(...)), and their text cannot be read from it. Write the "
                         "chunks' text instead: [d.page_content for d in docs] (LangChain), "
                         "[n.node.get_content() for n in nodes] (LlamaIndex), with their ids under retrieved_ids; "
                         "or save the rows as JSON lines.")
    return [item for item in items if item is not None]


def _without_enum_reprs(text: str) -> str:
    """The text with each enum repr outside string literals (LlamaIndex's ``relationships={
    <NodeRelationship.SOURCE: '1'>: ...}``) replaced by None, so that it parses; the string
    literals (the chunks' text) are kept token for token."""
    toks = [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO(text).readline)]
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(toks):
        j = i + 1
        if toks[i][1] == "<" and j < len(toks) and toks[j][0] == tokenize.NAME:
            while j + 2 < len(toks) and toks[j + 1][1] == "." and toks[j + 2][0] == tokenize.NAME:
                j += 2
            if (j + 3 < len(toks) and toks[j + 1][1] == ":" and toks[j + 2][0] in (tokenize.STRING, tokenize.NUMBER)
                    and toks[j + 3][1] == ">"):
                out.append((tokenize.NAME, "None"))
                i = j + 4
                continue
        out.append(toks[i])
        i += 1
    return str(tokenize.untokenize(out))


def _object_repr(node: ast.expr) -> dict[str, Any] | None:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args):
        return None
    kw = {k.arg: k.value for k in node.keywords if k.arg is not None}
    if node.func.id == "NodeWithScore":
        inner = kw.get("node")
        return _object_repr(inner) if inner is not None else None
    resource = kw.get("text_resource")  # a LlamaIndex Document: text_resource=MediaResource(text=...)
    if "text" not in kw and isinstance(resource, ast.Call):
        found = next((k.value for k in resource.keywords if k.arg == "text"), None)
        if found is not None:
            kw["text"] = found
    try:
        body = next((ast.literal_eval(kw[k]) for k in _REPR_TEXT if k in kw), None)
        ident = next((ast.literal_eval(kw[k]) for k in _REPR_ID if k in kw), None)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None
    if not isinstance(body, str) or not (ident is None or isinstance(ident, (str, int))):
        return None
    return {"text": body, "id": ident}


def reference(value: Any) -> str | tuple[str, ...] | None:
    value = to_plain(value)
    if is_missing(value):
        return None
    if isinstance(value, str):
        s = value.strip()
        if _LISTISH.match(s) and s.endswith("]"):
            try:
                parsed = parse_text_value(s)
            except ValueError:
                return value
            if isinstance(parsed, list) and all(isinstance(a, str) for a in parsed):
                return reference(parsed)
        return value
    if isinstance(value, (list, tuple)):
        items = []
        for i, a in enumerate(value):
            a = to_plain(a)
            if not isinstance(a, str):
                raise FieldError("reference", f"item {i} is {type(a).__name__}, not a string. Every acceptable "
                                 "answer must be text.")
            if a.strip():  # blank aliases accept nothing: drop them
                items.append(a)
        if not items:
            return None
        return items[0] if len(items) == 1 else tuple(items)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return text("reference", value)
    raise FieldError(
        "reference", f"expected text or a list of acceptable answers, got {type(value).__name__}. "
        "Give the reference as a string, or a list of strings when several answers are acceptable.")


def relevant(value: Any) -> tuple[str, ...] | dict[str, float] | None:
    value = to_plain(value)
    if is_missing(value):
        return None
    if isinstance(value, str) and value.strip()[:1] == "{":
        try:
            value = parse_text_value(value.strip())
        except ValueError as exc:
            raise FieldError("relevant_ids", f"the text does not parse as an object ({exc}).") from None
    if isinstance(value, Mapping):
        grades: dict[str, float] = {}
        for k, g in value.items():
            g = to_plain(g)
            if isinstance(g, bool) or not isinstance(g, (int, float)) or not math.isfinite(g) or g < 0:
                raise FieldError("relevant_ids",
                                 f"grade of '{k}' is {g!r}; grades must be numbers >= 0 (0 = not relevant).")
            grades[norm_id("relevant_ids", k)] = float(g)
        return grades
    return ids("relevant_ids", value)


def metadata(value: Any) -> dict[str, Any]:
    value = to_plain(value)
    if is_missing(value):
        return {}
    if isinstance(value, str):
        s = value.strip()
        if not s:
            return {}
        try:
            parsed = parse_text_value(s) if s[:1] == "{" else json.loads(s)
        except (ValueError, RecursionError):
            return {"value": value}
        value = parsed
    if not isinstance(value, Mapping):
        raise FieldError(
            "metadata", f"expected an object (mapping), got {type(value).__name__}. Give metadata as "
            'an object, e.g. {"chunk_size": 512, "generator": "my-model"}.')
    return {str(k): v for k, v in value.items()}
