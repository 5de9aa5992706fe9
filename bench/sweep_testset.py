"""Write the sweep example's test set: hand-written questions on the bundled handbook, each with
its reference passages as document spans (found by exact search in the text ragsight reads).

    .venv/bin/python bench/sweep_testset.py     # -> src/ragsight/data/handbook_testset.jsonl

The rows have the shape ``ragsight generate`` writes (id, question, reference, metadata with
question_type and reference_spans), so the example shows what a generated test set gives; the
questions are written by hand so that the example's ground truth is checked, and its passages are
single sentences or two, tighter than the chunks a generator would cite. Four questions are out
of scope: the handbook does not answer them.
"""

from __future__ import annotations

import json
from pathlib import Path

from ragsight.testset import OUT_OF_SCOPE_REFERENCE, load_corpus

ROOT = Path(__file__).resolve().parents[1]
HANDBOOK = ROOT / "src" / "ragsight" / "data" / "handbook"
OUT = ROOT / "src" / "ragsight" / "data" / "handbook_testset.jsonl"

# (question type, question, reference answer, [(document, evidence text), ...])
QUESTIONS: list[tuple[str, str, str, list[tuple[str, str]]]] = [
    ("single_hop", "How many days of paid annual leave do full-time employees in Leeds get?",
     "25 days per calendar year, in addition to public holidays.",
     [("03-leave.md", "Full-time employees in Leeds receive 25 days of paid annual leave per calendar year, in addition to public holidays.")]),
    ("single_hop", "how many unused leave days can i carry over",
     "Up to five unused days, which must be used by 31 March.",
     [("03-leave.md", "Up to five unused days may be carried over into the next calendar year. Carried-over days must be used by 31 March; days not used by then are lost.")]),
    ("single_hop", "How long is parental leave for the primary carer?",
     "20 weeks at full pay.",
     [("03-leave.md", "The primary carer of a new child, by birth or adoption, receives 20 weeks of parental leave at full pay.")]),
    ("single_hop", "Within how many days must an expense claim be submitted?",
     "Within 30 days of the date on the receipt.",
     [("04-expenses.md", "Submit each claim within 30 days of the date on the receipt;")]),
    ("single_hop", "Up to what amount can a team lead approve an expense claim in Leeds?",
     "Up to £500 (€575 in Porto); above that the Finance director must also approve.",
     [("04-expenses.md", "Your team lead approves claims up to £500 (€575 in Porto). Claims above that amount must also be approved by the Finance director, Henrik Sato.")]),
    ("single_hop", "What is the daily meal limit when working away from the office in the UK?",
     "£35 per day in the United Kingdom.",
     [("04-expenses.md", "When you work away from your usual office, you may claim meals up to £35 per day in the United Kingdom and up to €40 per day in Portugal.")]),
    ("single_hop", "When is business class booked for flights?",
     "Never: business class is never booked, with no exceptions.",
     [("05-travel.md", "Business class is never booked, with no exceptions.")]),
    ("single_hop", "What is the hotel price limit per night in London?",
     "£150 per night, breakfast included.",
     [("05-travel.md", "The travel desk books hotels up to these prices per night, breakfast included: £150 in London")]),
    ("single_hop", "how many days a week can I work from home",
     "Up to three days per week, agreed with your team lead.",
     [("06-remote-work.md", "You may work from home on up to three days per week, agreed with your team lead.")]),
    ("single_hop", "How much is the one-off home office allowance in Porto?",
     "€450 in Porto (£400 in Leeds).",
     [("06-remote-work.md", "you receive a one-off home office allowance of £400 in Leeds or €450 in Porto to buy a desk, a chair or a lamp.")]),
    ("single_hop", "How long must passwords be?",
     "At least 16 characters, and never reused.",
     [("07-security.md", "they must be at least 16 characters long and must never be reused.")]),
    ("single_hop", "Within what time must a security incident be reported?",
     "Within one hour of noticing it.",
     [("07-security.md", "Report every security incident to the security team within one hour of noticing it.")]),
    ("single_hop", "What is the personal learning budget in Leeds?",
     "£1,000 per calendar year, plus five paid learning days.",
     [("09-performance.md", "every employee has a personal learning budget of £1,000 per calendar year in Leeds or €1,100 in Porto, and five paid learning days per year.")]),
    ("single_hop", "How much does Kestrel match of pension contributions in Leeds?",
     "Employee contributions are matched up to 6% of salary.",
     [("10-benefits.md", "Kestrel matches employee contributions up to 6% of salary")]),
    ("single_hop", "How quickly must the on-call engineer acknowledge a P1 alert?",
     "Within 15 minutes, starting work on it immediately.",
     [("11-on-call.md", "the on-call engineer must acknowledge the alert within 15 minutes and start working on it immediately.")]),
    ("single_hop", "What is the weekly on-call allowance in Porto?",
     "€290 per week (£250 in Leeds), whether or not an alert fires.",
     [("11-on-call.md", "Being on call is paid with a fixed allowance of £250 per week in Leeds or €290 in Porto, whether or not any alert fires.")]),
    ("multi_context", "How much annual leave does someone in Leeds with six years of service get, and can they take a sabbatical?",
     "27 days a year (25 plus two for five or more years of service), and after five years of continuous service they may take a paid sabbatical of four weeks.",
     [("03-leave.md", "Employees with five or more years of service receive two extra days of annual leave per year, which makes 27 days in Leeds and 25 days in Porto."),
      ("10-benefits.md", "After five years of continuous service, employees may take a paid sabbatical of four weeks.")]),
    ("multi_context", "Can I do on-call duty while working from abroad?",
     "No: on-call duty must be done from the United Kingdom or Portugal and cannot be combined with working from abroad.",
     [("11-on-call.md", "On-call duty must be done from the United Kingdom or Portugal; it cannot be combined with working from abroad."),
      ("06-remote-work.md", "on-call duty cannot be done from abroad.")]),
    ("out_of_scope", "What is the company's policy on bringing dogs to the office?", OUT_OF_SCOPE_REFERENCE, []),
    ("out_of_scope", "How many shares does each employee receive in the stock option plan?", OUT_OF_SCOPE_REFERENCE, []),
    ("out_of_scope", "Which programming languages are used to build Tern?", OUT_OF_SCOPE_REFERENCE, []),
    ("out_of_scope", "What is the dress code for client meetings?", OUT_OF_SCOPE_REFERENCE, []),
]


def main() -> None:
    corpus = load_corpus(HANDBOOK)
    docs = {d.id: d.text for d in corpus.documents}
    rows = []
    for n, (qtype, question, reference, evidence) in enumerate(QUESTIONS, start=1):
        spans = []
        contexts = []
        for doc, text in evidence:
            start = docs[doc].find(text)
            if start < 0 or docs[doc].find(text, start + 1) >= 0:
                raise SystemExit(f"{doc}: evidence not found exactly once: {text!r}")
            spans.append({"doc_id": doc, "start": start, "end": start + len(text)})
            contexts.append(text)
        rows.append({
            "id": f"hb-{n:02d}",
            "question": question,
            "reference": reference,
            "reference_contexts": contexts,
            "metadata": {"question_type": qtype, "reference_spans": spans, "written_by": "hand"},
        })
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    print(f"{len(rows)} questions ({sum(1 for q in QUESTIONS if q[0] == 'out_of_scope')} out of scope) -> {OUT}")


if __name__ == "__main__":
    main()
