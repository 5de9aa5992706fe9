-- ragsight store, schema 1
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    finished_at REAL,
    status TEXT NOT NULL,            -- running | completed | interrupted | failed
    dataset TEXT,
    judge TEXT,
    embedder TEXT,
    metrics TEXT NOT NULL,           -- JSON list of {key, name, params}
    config TEXT NOT NULL,            -- JSON: settings, concurrency, prompt versions, package version
    metadata TEXT NOT NULL DEFAULT '{}',
    stats TEXT NOT NULL DEFAULT '{}',
    lock_owner TEXT,
    lock_heartbeat REAL
);
CREATE TABLE samples (
    run_id TEXT NOT NULL REFERENCES runs(id),
    idx INTEGER NOT NULL,
    sample_id TEXT NOT NULL,
    data TEXT NOT NULL,
    finished INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, sample_id)
);
CREATE TABLE scores (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    outcome TEXT NOT NULL,
    value REAL,
    reason TEXT NOT NULL,
    evidence TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (run_id, sample_id, metric)
);
CREATE TABLE judge_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    sample_id TEXT,
    step TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    prompt_id TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    judge TEXT NOT NULL,
    model TEXT NOT NULL,
    kind TEXT NOT NULL,
    messages TEXT NOT NULL,
    raw_output TEXT,
    parsed TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    cached INTEGER NOT NULL,
    error TEXT,
    structured TEXT,
    started_at REAL NOT NULL
);
CREATE INDEX judge_calls_sample ON judge_calls(run_id, sample_id);
CREATE INDEX judge_calls_step ON judge_calls(step);
CREATE TABLE problems (
    run_id TEXT NOT NULL,
    source TEXT NOT NULL,
    row INTEGER NOT NULL,
    field TEXT,
    message TEXT NOT NULL
);
CREATE TABLE cache (
    key TEXT PRIMARY KEY,
    entry TEXT NOT NULL,
    created_at REAL NOT NULL
);
