"""Ingest of every supported format, document ids, pre-chunked JSONL, missing extras."""

from __future__ import annotations

import builtins
import json
from pathlib import Path
from typing import Any

import pytest

from ragsight.errors import InputError, MissingExtraError
from ragsight.testset import ChunkSettings, load_corpus
from ragsight.testset._ingest import html_to_text, markdown_to_text, read_document


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` in Helvetica (hand-built, with a correct xref table)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)


def test_txt_and_markdown(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("Plain   text  here.\n\n\n\nSecond paragraph.", "utf-8")
    (tmp_path / "guide.md").write_text(
        "# Leave\n\nStaff get **25 days**; see [the policy](http://x/y) and `Roost`.\n\n---\n",
        "utf-8",
    )
    assert read_document(tmp_path / "notes.txt") == "Plain text here.\n\nSecond paragraph."
    assert (
        read_document(tmp_path / "guide.md")
        == "Leave\n\nStaff get 25 days; see the policy and Roost."
    )


def test_html_drops_scripts_styles_and_head(tmp_path: Path) -> None:
    html = """<html><head><title>Travel</title><style>p {color: red}</style>
    <script>var secret = "do not index";</script></head>
    <body><h1>Hotels</h1><p>London: &pound;150 per night.</p><noscript>enable js</noscript>
    <ul><li>Trains first</li><li>Economy flights</li></ul></body></html>"""
    text = html_to_text(html)
    assert "secret" not in text and "color" not in text and "enable js" not in text
    assert text.splitlines()[0] == "Travel"
    assert "London: £150 per night." in text
    assert "Trains first\n\nEconomy flights" in text
    (tmp_path / "t.html").write_text(html, "utf-8")
    assert read_document(tmp_path / "t.html") == text


def test_pdf(tmp_path: Path) -> None:
    pytest.importorskip("pypdf")
    (tmp_path / "p.pdf").write_bytes(minimal_pdf("Parental leave is 20 weeks."))
    assert read_document(tmp_path / "p.pdf") == "Parental leave is 20 weeks."


def test_docx(tmp_path: Path) -> None:
    docx = pytest.importorskip("docx")
    d = docx.Document()
    d.add_paragraph("Expenses are claimed in Ledgerly.")
    d.add_paragraph("Receipts over 25 pounds are needed.")
    table = d.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text = "Leeds"
    table.rows[0].cells[1].text = "£35"
    d.save(str(tmp_path / "e.docx"))
    assert read_document(tmp_path / "e.docx") == (
        "Expenses are claimed in Ledgerly.\n\nReceipts over 25 pounds are needed.\n\nLeeds | £35"
    )


def _block_import(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    real = builtins.__import__

    def fake(mod: str, *args: Any, **kwargs: Any) -> Any:
        if mod == name or mod.startswith(name + "."):
            raise ImportError(f"No module named '{mod}'")
        return real(mod, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)


@pytest.mark.parametrize(
    ("suffix", "module", "extra"), [(".pdf", "pypdf", "pdf"), (".docx", "docx", "docx")]
)
def test_missing_parser_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str, module: str, extra: str
) -> None:
    f = tmp_path / f"x{suffix}"
    f.write_bytes(b"irrelevant")
    _block_import(monkeypatch, module)
    with pytest.raises(MissingExtraError) as info:
        read_document(f)
    assert info.value.extra == extra
    assert f"ragsight[{extra}]" in str(info.value)


def test_folder_ids_are_relative_paths_and_order_is_stable(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "two.md").write_text("Second document. It has two sentences.", "utf-8")
    (tmp_path / "a.txt").write_text("First document.", "utf-8")
    (tmp_path / "skip.png").write_bytes(b"\x89PNG")
    (tmp_path / ".hidden.md").write_text("Hidden.", "utf-8")
    corpus = load_corpus(tmp_path)
    assert corpus.doc_ids == ["a.txt", "b/two.md"]
    assert [c.id for c in corpus.chunks] == ["a.txt#0", "b/two.md#0"]
    # a list of files: ids relative to their common folder
    listed = load_corpus([tmp_path / "b" / "two.md", tmp_path / "a.txt"])
    assert sorted(listed.doc_ids) == ["a.txt", "b/two.md"]
    # the same folder elsewhere gives the same ids
    assert load_corpus(str(tmp_path)).chunks == corpus.chunks


def test_prechunked_jsonl(tmp_path: Path) -> None:
    rows = [
        {"id": "kb-1#0", "text": "Alpha."},
        {"id": "x7", "text": "Beta.", "doc_id": "kb-2"},
        {"id": "x8", "text": "   "},
    ]
    (tmp_path / "chunks.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", "utf-8")
    corpus = load_corpus(tmp_path / "chunks.jsonl", ChunkSettings(size=10, overlap=0))
    assert [(c.id, c.doc_id, c.text) for c in corpus.chunks] == [
        ("kb-1#0", "kb-1", "Alpha."),
        ("x7", "kb-2", "Beta."),
    ]


def test_prechunked_jsonl_errors(tmp_path: Path) -> None:
    f = tmp_path / "c.jsonl"
    f.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', "utf-8")
    with pytest.raises(InputError, match="appears twice"):
        load_corpus(f)
    f.write_text('{"text": "no id"}\n', "utf-8")
    with pytest.raises(InputError, match="line 1"):
        load_corpus(f)


def test_nothing_usable_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "empty.md").write_text("   \n", "utf-8")
    with pytest.raises(InputError, match="no text found"):
        load_corpus(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        load_corpus(tmp_path / "missing")
    (tmp_path / "x.rtf").write_text("{\\rtf1 hi}", "utf-8")
    with pytest.raises(InputError, match="unsupported file type"):
        load_corpus(tmp_path / "x.rtf")


def test_bundled_handbook_loads() -> None:
    from ragsight.testset.example_target import handbook_path

    corpus = load_corpus(handbook_path())
    assert 8 <= len(corpus.doc_ids) <= 15
    assert all(c.id == f"{c.doc_id}#{c.index}" for c in corpus.chunks)
    assert markdown_to_text("# Title\n\nBody.") == "Title\n\nBody."
