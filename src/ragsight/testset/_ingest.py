"""Reading documents for test-set generation: text, Markdown, HTML, PDF, DOCX, or chunks.

:func:`load_corpus` takes a folder, a file, or a list of them and returns a :class:`Corpus`: the
documents and their chunks. A document's id is its path relative to the folder given (or, for a
list of files, to their common folder), with ``/`` separators, so ids do not depend on where the
folder lives. A ``.jsonl`` file is taken as already chunked: one object per line with ``id`` and
``text`` and optionally ``doc_id``; its chunks are used as they are.

PDF needs ``pypdf`` (extra ``pdf``), DOCX needs ``python-docx`` (extra ``docx``); both are imported
only when such a file is read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from ..errors import InputError, MissingExtraError
from ._chunk import Chunk, ChunkSettings, chunk_document

__all__ = [
    "SUPPORTED_SUFFIXES",
    "Corpus",
    "Document",
    "html_to_text",
    "load_corpus",
    "markdown_to_text",
    "read_document",
]

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".html", ".htm")
SUPPORTED_SUFFIXES = (*TEXT_SUFFIXES, ".pdf", ".docx", ".jsonl")


@dataclass(frozen=True)
class Document:
    """One source document: ``id`` is its relative path (``guides/leave.md``)."""

    id: str
    text: str
    path: str


@dataclass(frozen=True)
class Corpus:
    """Documents and their chunks, in a stable order (documents by id, chunks by position)."""

    documents: tuple[Document, ...]
    chunks: tuple[Chunk, ...]

    def chunk(self, chunk_id: str) -> Chunk:
        for c in self.chunks:
            if c.id == chunk_id:
                return c
        raise KeyError(chunk_id)

    @property
    def doc_ids(self) -> list[str]:
        ids = [d.id for d in self.documents] or [c.doc_id for c in self.chunks]
        return list(dict.fromkeys(ids))


# ---- formats -----------------------------------------------------------------------------------

_BLOCK_TAGS = {
    "p",
    "div",
    "br",
    "li",
    "ul",
    "ol",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "tr",
    "table",
    "section",
    "article",
    "header",
    "footer",
    "blockquote",
    "pre",
    "dd",
    "dt",
    "hr",
    "title",
}
_SKIP_TAGS = {"script", "style", "noscript", "template", "svg", "head"}


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIP_TAGS:
            self._skip += 1
        if tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIP_TAGS and self._skip:
            self._skip -= 1
        if tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        elif not self._skip:
            self.parts.append(data)


def _tidy(text: str) -> str:
    """Collapse spaces inside lines and runs of blank lines; keep paragraph breaks."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    out = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", out).strip()


def html_to_text(html: str) -> str:
    """The visible text of an HTML page (scripts, styles and the head are dropped); block
    elements become paragraph breaks. Uses the standard library parser."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    body = _tidy("".join(parser.parts))
    title = " ".join("".join(parser.title).split())
    if title and not body.startswith(title):
        body = f"{title}\n\n{body}" if body else title
    return body


_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MD_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$", re.MULTILINE)
_MD_EMPHASIS = re.compile(r"(\*\*|__|\*|`)(?=\S)(.+?)(?<=\S)\1")


def markdown_to_text(md: str) -> str:
    """Markdown with its markup removed: headings keep their words, links their text, emphasis
    and code ticks go. Lists and paragraphs keep their line structure."""
    text = _MD_LINK.sub(r"\1", md)
    text = _MD_HEADING.sub(r"\1", text)
    text = _MD_EMPHASIS.sub(r"\2", text)
    text = re.sub(r"^[ \t]{0,3}(?:[-*_][ \t]*){3,}$", "", text, flags=re.MULTILINE)  # rules
    return _tidy(text)


def _read_pdf(path: Path) -> str:
    try:
        import pypdf
    except ImportError as exc:
        raise MissingExtraError("reading PDF files", "pdf", "pypdf") from exc
    try:
        reader = pypdf.PdfReader(str(path))
        pages = [page.extract_text() or "" for page in reader.pages]
    except Exception as exc:  # pypdf raises many types for damaged files
        raise InputError(f"{path}: not a readable PDF ({type(exc).__name__}: {exc}).") from exc
    return _tidy("\n\n".join(pages))


def _read_docx(path: Path) -> str:
    try:
        import docx
    except ImportError as exc:
        raise MissingExtraError("reading DOCX files", "docx", "docx") from exc
    try:
        document = docx.Document(str(path))
    except Exception as exc:
        raise InputError(
            f"{path}: not a readable DOCX file ({type(exc).__name__}: {exc})."
        ) from exc
    parts = [p.text for p in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            parts.append(" | ".join(cell.text for cell in row.cells))
    return _tidy("\n\n".join(parts))


def _read_text(path: Path) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "save it as UTF-8."
        ) from exc


def read_document(path: str | os.PathLike[str]) -> str:
    """The plain text of one document, by its suffix."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".pdf":
        return _read_pdf(p)
    if suffix == ".docx":
        return _read_docx(p)
    if suffix in (".html", ".htm"):
        return html_to_text(_read_text(p))
    if suffix in (".md", ".markdown"):
        return markdown_to_text(_read_text(p))
    if suffix == ".txt":
        return _tidy(_read_text(p))
    raise InputError(f"{p}: unsupported file type '{suffix}'. Use {', '.join(SUPPORTED_SUFFIXES)}.")


def _read_chunks_jsonl(path: Path, base: Path) -> list[Chunk]:
    out: list[Chunk] = []
    seen: set[str] = set()
    text = _read_text(path)
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}, line {n}: not valid JSON ({exc.msg}).") from exc
        if not isinstance(row, dict):
            raise InputError(f"{path}, line {n}: expected an object with 'id' and 'text'.")
        cid, body = row.get("id"), row.get("text")
        if cid is None or not isinstance(body, str):
            raise InputError(f"{path}, line {n}: each chunk needs 'id' and a 'text' string.")
        cid = str(cid)
        if cid in seen:
            raise InputError(
                f"{path}, line {n}: chunk id '{cid}' appears twice; ids must be unique."
            )
        seen.add(cid)
        doc_id = row.get("doc_id")
        doc = str(doc_id) if doc_id is not None else cid.split("#", 1)[0]
        if not body.strip():
            continue
        out.append(Chunk(id=cid, doc_id=doc, index=len(out), text=body.strip()))
    return out


def _files(paths: Sequence[Path]) -> tuple[list[Path], Path]:
    files: list[Path] = []
    for p in paths:
        if not p.exists():
            raise InputError(f"{p}: no such file or folder.")
        if p.is_dir():
            for root, dirs, names in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(names):
                    f = Path(root) / name
                    if f.suffix.lower() in SUPPORTED_SUFFIXES and not name.startswith("."):
                        files.append(f)
        else:
            files.append(p)
    if len(paths) == 1 and paths[0].is_dir():
        base = paths[0]
    else:
        parents = [str(f.resolve().parent) for f in files] or [os.getcwd()]
        base = Path(os.path.commonpath(parents))
    return files, base


def _doc_id(path: Path, base: Path) -> str:
    try:
        rel = path.resolve().relative_to(base.resolve())
    except ValueError:
        rel = Path(path.name)
    return rel.as_posix()


def load_corpus(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    settings: ChunkSettings | None = None,
) -> Corpus:
    """Read documents (a folder is searched recursively, in sorted order) and chunk them.

    Raises InputError when nothing usable is found, MissingExtraError for a PDF or DOCX file
    when its parser is not installed.
    """
    settings = settings or ChunkSettings()
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    files, base = _files([Path(p) for p in items])
    documents: list[Document] = []
    chunks: list[Chunk] = []
    for f in files:
        if f.suffix.lower() == ".jsonl":
            chunks.extend(_read_chunks_jsonl(f, base))
            continue
        text = read_document(f)
        if not text.strip():
            continue
        doc = Document(id=_doc_id(f, base), text=text, path=str(f))
        documents.append(doc)
        chunks.extend(chunk_document(doc.id, text, settings))
    if not chunks:
        raise InputError(
            f"no text found in {', '.join(str(p) for p in items)}; give a folder or files of type "
            f"{', '.join(SUPPORTED_SUFFIXES)}."
        )
    ids = [c.id for c in chunks]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise InputError(f"chunk id '{dup}' occurs twice; give documents distinct names.")
    return Corpus(tuple(sorted(documents, key=lambda d: d.id)), tuple(chunks))
