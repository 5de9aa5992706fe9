-- ragsight store, schema 5: online evaluation (ragsight monitor, src/ragsight/monitor/).
-- Every span the OTLP receiver accepts is written here before it answers 200; the requests
-- (traces) assembled from them carry their state, so a restart goes on where it stopped.
CREATE TABLE IF NOT EXISTS monitor_spans (
    -- trace_id: lower-case hex
    trace_id TEXT NOT NULL,
    span_id TEXT NOT NULL,
    -- parent_id: NULL for a root span
    parent_id TEXT,
    received_at REAL NOT NULL,
    -- span: the OTLP Span message, serialized (protobuf)
    span BLOB NOT NULL,
    PRIMARY KEY (trace_id, span_id)
) WITHOUT ROWID;
-- One row per request (trace). state: open (spans arriving), skipped (not a RAG request, or
-- unreadable; reason says why), unsampled, queued (sampled, waiting for the judge), batched
-- (in a micro-batch being evaluated), evaluated, not_evaluated (sampled but not judged; reason).
CREATE TABLE IF NOT EXISTS monitor_requests (
    trace_id TEXT PRIMARY KEY,
    first_seen REAL NOT NULL,
    last_seen REAL NOT NULL,
    spans INTEGER NOT NULL DEFAULT 0,
    root_ended INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL DEFAULT 'open',
    reason TEXT,
    -- started_at: the request's own start (its root span), else first_seen
    started_at REAL,
    -- sample: the sample row (JSON) assembled from the spans
    sample TEXT,
    batch_id TEXT,
    run_id TEXT,
    done_at REAL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS monitor_requests_state ON monitor_requests(state, last_seen);
-- Each evaluated request's scores, by metric (a copy of the run's, for the windows).
CREATE TABLE IF NOT EXISTS monitor_scores (
    trace_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    outcome TEXT NOT NULL,
    value REAL,
    started_at REAL NOT NULL,
    PRIMARY KEY (trace_id, metric)
) WITHOUT ROWID;
-- Alerts raised, once per window, metric and kind.
CREATE TABLE IF NOT EXISTS monitor_alerts (
    window_start REAL NOT NULL,
    window_s REAL NOT NULL,
    metric TEXT NOT NULL,
    -- kind: below (under the --alert value), drop (below the previous window)
    kind TEXT NOT NULL,
    raised_at REAL NOT NULL,
    message TEXT NOT NULL,
    -- detail: JSON: mean, CI, n, threshold or p-value
    detail TEXT NOT NULL,
    -- delivered: the webhook answered 2xx (or there is none)
    delivered INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (window_start, window_s, metric, kind)
) WITHOUT ROWID;
-- What the monitor keeps besides: its settings as last started (setting:NAME), each micro-batch
-- being evaluated (batch:ID, its run, UTC day and cost; removed when it is done) and each UTC
-- day's spend (spent:YYYY-MM-DD, US dollars). Values are JSON.
CREATE TABLE IF NOT EXISTS monitor_state (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
