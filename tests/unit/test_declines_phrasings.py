"""The decline detector on phrasings beyond its first lists: declines that name the documentation,
the manual, "what I was given", in English, German, French and Spanish; partial declines beside
an answer; and statements of fact that hold decline-like words ("X is not supported in WAL mode",
"No data is written until ...", "he didn't mention her name"), which are claims and must stay
claims (a claim read as a decline is set aside by faithfulness, unjudged)."""

from __future__ import annotations

import pytest

from ragsight.analyses import detect_declines


@pytest.mark.parametrize("response", [
    "That isn't covered in the documentation I have.",
    "I couldn't find anything about PostgreSQL replication in the SQLite docs.",
    "Sorry, that's outside what I can answer from these docs.",
    "There's nothing about replication in the documentation I was given.",
    "That question falls outside the SQLite documentation.",
    "I have no documentation on that.",
    "The knowledge base I use has no entry for that.",
    "I only have the SQLite documentation, and it does not address PostgreSQL replication.",
    "I'm not able to answer that based on the documentation provided.",
    "There doesn't seem to be any information on canteen menus in the documents.",
    "Regrettably, I lack the details needed to answer this.",
    "No relevant information was retrieved for this question.",
    "Nothing I was given mentions company cars.",
    "Dazu finde ich in den Unterlagen nichts.",
    "Das steht nicht in der Dokumentation.",
    "Leider kann ich das anhand der vorliegenden Dokumentation nicht beantworten.",
    "Die Dokumentation behandelt dieses Thema nicht.",
    "La documentation ne traite pas de cette question.",
    "Désolé, cela dépasse le cadre de la documentation dont je dispose.",
    "Rien dans la documentation n'en parle.",
    "Je ne trouve pas cette information dans les documents.",
    "No encuentro nada sobre eso en la documentación.",
    "La documentación no cubre ese tema.",
    "Lo siento, esa pregunta está fuera del alcance de la documentación.",
])
def test_a_decline_in_new_words_is_a_decline(response: str) -> None:
    assert detect_declines(response).verdict == "declines", detect_declines(response)


@pytest.mark.parametrize(("response", "declined", "content"), [
    ("That isn't covered in the documentation I have, though VACUUM does rebuild the database file.",
     "That isn't covered in the documentation I have", "VACUUM does rebuild the database file"),
    ("As far as I can tell the documentation doesn't cover backups to S3; the backup API copies a database.",
     "As far as I can tell the documentation doesn't cover backups to S3", "the backup API copies a database"),
    ("No encuentro el límite exacto en la documentación, pero el tamaño de página por defecto es 4096 bytes.",
     "No encuentro el límite exacto en la documentación", "pero el tamaño de página por defecto es 4096 bytes"),
])
def test_a_partial_decline_keeps_its_answer_as_content(response: str, declined: str, content: str) -> None:
    signals = detect_declines(response)
    assert signals.verdict == "mixed"
    assert ("decline", declined) in signals.clauses
    assert ("content", content) in signals.clauses


@pytest.mark.parametrize("claim", [
    "Changing the page size is not supported in WAL mode.",
    "No data is written to the database file until the transaction commits.",
    "There is no information schema in SQLite; query sqlite_schema instead.",
    "SQLite cannot determine a column's affinity from a value alone.",
    "A read transaction cannot see changes that were committed after it started.",
    "SQLite does not provide stored procedures.",
    "The documentation does not recommend running VACUUM INTO on a busy database.",
    "It was a stark oversight that he didn't even mention her name.",
    "Freelist pages do not contain any data.",
    "There is nothing I have ever wanted more than a quiet life.",
    "This option is outside the scope of the SQL standard.",
    "Im WAL-Modus kann die Seitengröße nicht geändert werden.",
    "La taille de page ne peut pas être modifiée en mode WAL.",
    "No se puede cambiar el tamaño de página en modo WAL.",
])
def test_a_statement_of_fact_is_no_decline(claim: str) -> None:
    signals = detect_declines(claim)
    assert "decline" not in {kind for kind, _ in signals.clauses}, signals
