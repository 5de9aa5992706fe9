-- ragsight store, schema 4: human labels (store/_labels.py, docs/review.md).
-- (3 belongs to another change; the runner applies whatever numbered files exist, in order.)
-- A label refers to a sample by its content key (question, contexts, response, reference), so it
-- survives re-runs of the same data; run_id and sample_id say where it was given.
CREATE TABLE labels (
    sample_key TEXT NOT NULL,
    metric TEXT NOT NULL,
    claim TEXT NOT NULL DEFAULT '',        -- the claim's key, '' for a sample label
    field TEXT NOT NULL,                   -- the label's name ('human', 'expert', 'correct'...)
    who TEXT NOT NULL DEFAULT '',
    value REAL NOT NULL,
    made_at TEXT NOT NULL,                 -- ISO 8601 UTC
    run_id TEXT,
    sample_id TEXT,
    note TEXT,
    PRIMARY KEY (sample_key, metric, claim, field, who)
) WITHOUT ROWID;
-- Each sample's content key, written with the run (and for older runs when first asked).
CREATE TABLE sample_keys (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    sample_key TEXT NOT NULL,
    PRIMARY KEY (run_id, sample_id)
) WITHOUT ROWID;
CREATE INDEX sample_keys_key ON sample_keys(sample_key);
