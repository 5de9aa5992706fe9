"""The viewer as an application: a request (method, target, headers, body) in, a response out.
No socket here (``_server.py`` serves it), so the tests call it directly as well.

Who may ask:

- On a loopback address (the default, 127.0.0.1) the viewer answers only requests whose ``Host``
  is that address or ``localhost`` with its port, so a web page elsewhere cannot reach it through
  a DNS name that points at 127.0.0.1 (DNS rebinding).
- Bound to any other address it has an access token, printed once when it starts: every request
  carries it (the URL's ``?token=``, which sets a same-site cookie and is then dropped from the
  address bar, the cookie, or an ``X-Ragsight-Token`` header); without it the answer is 403.
- A write (``POST /api/labels``) must be JSON (``Content-Type: application/json``, which a form
  of another site cannot send without the browser asking first, and the viewer never allows it),
  must come from the viewer's own origin when the browser says where it comes from (``Origin``,
  ``Sec-Fetch-Site``), and must carry the token in its header when there is one.

Every store read and write goes through the store's public API, under one lock (one SQLite
connection serves every request thread).
"""

from __future__ import annotations

import hmac
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, parse_qsl, quote, unquote, urlencode, urlsplit

from ..errors import ConfigError, InputError, RagsightError, StoreError
from ..report import split_labels
from ..store import Store
from ._assets import e, page, t
from ._labels import FIELD, LabelWriter, read_labels
from ._model import RunTable, Tables
from ._page_compare import compare_body, comparison
from ._page_monitor import has_monitor, monitor_body, window_arg, window_body
from ._page_run import RunQuery, corrected_table, run_body, select
from ._page_runs import runs_body
from ._page_sample import sample_body
from ._search import RunKey, SearchIndex, index_path_for

__all__ = ["COOKIE", "Response", "ViewApp"]

log = logging.getLogger(__name__)

COOKIE = "ragsight_token"
MAX_BODY = 64 * 1024
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


def _html(status: int, title: str, body: str, token: str | None = None) -> Response:
    return Response(status, page(title, body, token=token).encode("utf-8"))


def _json(status: int, value: Mapping[str, Any]) -> Response:
    return Response(status, json.dumps(value, ensure_ascii=False).encode("utf-8"), "application/json; charset=utf-8")


def _api_error(status: int, message: str) -> Response:
    return _json(status, {"error": message})


def _error(status: int, message: str) -> Response:
    return _html(status, f"{status} {HTTPStatus(status).phrase}",
                 f'<h1>{status} {e(HTTPStatus(status).phrase)}</h1><p class="warn">{t(message)}</p>'
                 '<p><a href="/">all runs</a></p>')


_SQLITE_HEADER = b"SQLite format 3\x00"


def _check_store(path: str) -> None:
    """Raise StoreError unless ``path`` is an existing ragsight store (or ``:memory:``). Read from
    the file's header, without opening it as a database: the viewer never turns an empty file, a
    text file, another program's database or a device into a store, nor writes a journal beside
    it."""
    if path == ":memory:":
        return
    p = Path(path)
    hint = "give the --store file that 'ragsight evaluate' wrote"
    if not p.exists():
        raise StoreError(f"no store at {path}; {hint}")
    if not p.is_file():
        raise StoreError(f"{path} is not a ragsight store (not a regular file); {hint}")
    try:
        with p.open("rb") as f:
            head = f.read(100)
    except OSError as exc:
        raise StoreError(f"cannot read the store {path}: {exc.strerror or exc}") from None
    if len(head) < 100 or not head.startswith(_SQLITE_HEADER):
        what = "an empty file" if not head else "not an SQLite database"
        raise StoreError(f"{path} is not a ragsight store ({what}); {hint}")
    version = int.from_bytes(head[60:64], "big")  # SQLite's user_version: ragsight's schema number
    if version == 0 and Path(path + "-wal").exists():  # a new store whose schema is in its WAL still
        try:
            conn = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True)
            try:
                version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            finally:
                conn.close()
        except sqlite3.Error:
            version = 0
    if version == 0:
        raise StoreError(f"{path} is not a ragsight store (an SQLite database of another program); {hint}")


COMPARE_WAIT_S = 1.5
"""How long a comparison request waits for its result before answering "computing" (and the
page reloading)."""


class _Job:
    """A computation in a thread of its own; ``done`` is set when ``value`` or ``error`` is."""

    def __init__(self, work: Callable[[], tuple[Any, ...]]) -> None:
        self.done = threading.Event()
        self.value: tuple[Any, ...] | None = None
        self.error: Exception | None = None
        self.started = time.perf_counter()
        self.took = 0.0

        def run() -> None:
            try:
                self.value = work()
            except Exception as exc:  # given to the request that finds it
                self.error = exc
            finally:
                self.took = time.perf_counter() - self.started
                self.done.set()

        threading.Thread(target=run, name="ragsight-view-compare", daemon=True).start()


class ViewApp:
    """The viewer over one store. ``token``: the access token every request must carry (``None``
    on a loopback address). ``index_path``: where the search index lives (default: beside the
    store; ``:memory:`` for none on disk). ``field``: the label field it writes and reads."""

    def __init__(self, store_path: str, *, token: str | None = None, index_path: str | None = None,
                 field: str = FIELD) -> None:
        if not field.strip():
            raise ConfigError("the label field must be a name, e.g. human")
        self.store_path = store_path
        self.field = field
        _check_store(store_path)
        self.store = Store(store_path)
        self.token = token
        self.tables = Tables()
        self.notes: list[str] = []
        path = index_path or index_path_for(store_path)
        try:
            self.index = SearchIndex(path)
        except (sqlite3.Error, ConfigError) as exc:
            if index_path is not None:
                raise ConfigError(f"cannot keep the search index at {path}: {exc}") from None
            self.index = SearchIndex(":memory:")
            self.notes.append(f"the search index cannot be kept beside the store ({path}: {exc}); it is kept "
                              "in memory and built again at each start (--index PATH puts it elsewhere)")
        self.lock = threading.RLock()
        self.allowed_hosts: set[str] | None = None
        self.labels = LabelWriter(self.store, field)
        self._building: set[str] = set()
        self._threads: list[threading.Thread] = []
        self._compared: dict[tuple[Any, ...], _Job] = {}

    def close(self) -> None:
        for thread in list(self._threads):  # an index being built finishes (or is left) first
            thread.join(timeout=10)
        self.index.close()
        self.store.close()

    def bound(self, host: str, port: int) -> None:
        """Called once the server listens: on a loopback address, only these Host headers pass."""
        if host in LOOPBACK_NAMES or host.startswith("127."):
            names = {host, "localhost", "127.0.0.1"} if host in LOOPBACK_NAMES else {host}
            self.allowed_hosts = {f"{n}:{port}" for n in names} | {f"[{n}]:{port}" for n in names if ":" in n}

    # ---- the door ---------------------------------------------------------------------------

    def _token_of(self, headers: Mapping[str, str], query: Mapping[str, list[str]]) -> tuple[str | None, str]:
        """The token the request carries and where: 'header', 'cookie', 'query' or ''."""
        if "x-ragsight-token" in headers:
            return headers["x-ragsight-token"], "header"
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed cookie header carries no token
            cookie = SimpleCookie()
        if COOKIE in cookie:
            return cookie[COOKIE].value, "cookie"
        if "token" in query:
            return query["token"][0], "query"
        return None, ""

    def _right_token(self, given: str | None) -> bool:
        assert self.token is not None
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes = b"") -> Response:
        """Answer one request; ``headers`` with lower-case names."""
        t0 = time.perf_counter()
        if not target.startswith("/") or target.startswith("//"):
            # a full URL (GET http://host/...) or a network path names a host the Host check
            # does not see: neither is served
            return _error(400, "the request target must be a path on this viewer (/...), not a full URL")
        parts = urlsplit(target)
        query = parse_qs(parts.query, keep_blank_values=True)
        host = headers.get("host", "").lower()
        refuse = _api_error if parts.path.startswith("/api/") else _error
        if self.allowed_hosts is not None and host not in self.allowed_hosts:
            return refuse(403, f"this viewer answers requests to {' or '.join(sorted(self.allowed_hosts))} only")
        if self.token is not None:
            given, where = self._token_of(headers, query)
            if not self._right_token(given):
                return refuse(403, "this viewer needs its access token: open the address that "
                                   "'ragsight view' printed when it started (it ends with ?token=...)")
            if where == "query" and method == "GET":
                # the query as it came, less the token, encoded again (never a decoded value
                # in a header: an encoded & would split a filter, an encoded line break end it)
                rest = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "token"]
                clean = quote(parts.path, safe="/%") + ("?" + urlencode(rest) if rest else "")
                return Response(303, b"", headers={
                    "Location": clean,
                    "Set-Cookie": f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"})
        try:
            if method == "POST":
                return self._post(parts.path, headers, body)
            if method != "GET":
                return _error(405, f"{method} is not served here")
            response = self._get(parts.path, {k: v[-1] for k, v in query.items()}, query, t0)
        except (ConfigError, InputError) as exc:
            return _error(400, str(exc))
        except StoreError as exc:
            return _error(404 if "no run" in str(exc) or "no sample" in str(exc) else 500, str(exc))
        return response

    # ---- pages ------------------------------------------------------------------------------

    def _get(self, path: str, params: dict[str, str], multi: dict[str, list[str]], t0: float) -> Response:
        segs = [unquote(s) for s in path.split("/")[1:]]
        if segs == [""]:
            return self._runs()
        if len(segs) == 2 and segs[0] == "run":
            return self._run(segs[1], params, t0)
        if len(segs) == 4 and segs[0] == "run" and segs[2] == "sample":
            return self._sample(segs[1], segs[3], params.get("order", ""))
        if segs == ["compare"]:
            return self._compare(multi.get("run", []), params.get("allow_poor") == "1")
        if segs[0] == "monitor" and (len(segs) == 1 or (len(segs) == 3 and segs[1] == "window")):
            return self._monitor(segs[2] if len(segs) == 3 else None, params, multi.get("alert", []))
        return _error(404, f"nothing at {path}")

    def _monitor(self, start: str | None, params: Mapping[str, str], alerts: list[str]) -> Response:
        """The live monitor page (windows, CIs, alerts), or one window's requests."""
        length = window_arg(params.get("window"))
        with self.lock:
            if start is None:
                body = monitor_body(self.store.conn, length, alerts)
            else:
                try:
                    at = float(start)
                except ValueError:
                    raise ConfigError(f"a window starts at a number of seconds, not '{start}'") from None
                body = window_body(self.store.conn, at, length or 3600.0)
        response = _html(200, "ragsight view: monitor", body, self.token)
        if start is None:
            response.headers["Refresh"] = "10"
        return response

    def _table(self, run_id: str) -> RunTable:
        return self.tables.get(self.store, run_id)

    def _runs(self) -> Response:
        with self.lock:
            infos = self.store.runs()
            tables = {i.id: self._table(i.id) for i in infos}
            body = runs_body(self.store, tables, infos)
            if has_monitor(self.store.conn):
                body = ('<p id="monitor-link"><a href="/monitor">Monitor</a>: production requests per window, '
                        "with their CIs and alerts</p>") + body
        return _html(200, "ragsight view: runs", body, self.token)

    def _run(self, ref: str, params: Mapping[str, str], t0: float) -> Response:
        query = RunQuery.parse(params)
        timing: dict[str, float] = {}
        with self.lock:
            run_id = self.store.resolve_run(ref)
            table = self._table(run_id)
            labels, found = read_labels(self.store, run_id, self.field)
            general, own, _ = split_labels(found, self.field)  # as calibrate reads them
        hits = None
        note = ""
        key = RunKey(run_id, table.info.created_at, len(table))
        if query.q:
            ts = time.perf_counter()
            if not self.index.ready(key):  # the first search of a run builds its index (then it is kept)
                timing["index built"] = self._ensure_index(key)
            hits = self.index.search(key, query.q)
            timing["search"] = time.perf_counter() - ts
            if hits is None:  # punctuation only: said, and every sample shown
                note = (f'<p class="warn" id="search-note">The search <q>{e(query.q)}</q> has no word to search '
                        "for (words are letters and digits); every sample is shown.</p>")
        elif not self.index.ready(key):
            self._build_in_background(key)
        ts = time.perf_counter()
        chosen = select(table, query, hits, labels)
        timing["filter"] = time.perf_counter() - ts
        questions = self.index.questions(key, chosen.rows)
        if questions is None:
            with self.lock:
                questions = {i: self.store.sample(run_id, table.ids[i]).question or "" for i in chosen.rows}
        timing["total"] = time.perf_counter() - t0
        corrected = corrected_table(table, general, own, self.field)
        body = run_body(table, query, hits, chosen, questions, labels, timing, note + corrected)
        return _html(200, f"ragsight view: {run_id}", body, self.token)

    def _ensure_index(self, key: RunKey) -> float:
        """Index the run now (or wait for the build under way), reading the store through a
        connection of its own, so other pages keep answering meanwhile."""
        if self.store_path == ":memory:":
            with self.lock:
                return self.index.ensure(self.store, key)
        with Store(self.store_path) as own:
            return self.index.ensure(own, key)

    def _build_in_background(self, key: RunKey) -> None:
        """Index a run for search in a thread with its own store connection, so that the first
        search finds it ready (or finds it being built, and waits for the rest)."""
        if self.store_path == ":memory:" or self.index.path == ":memory:" or key.run_id in self._building:
            return
        self._building.add(key.run_id)

        def build() -> None:
            try:
                self._ensure_index(key)
            except (RagsightError, sqlite3.Error) as exc:  # the first search builds it again and says why
                log.info("search index of run %s not built: %s", key.run_id, exc)
            finally:
                self._building.discard(key.run_id)

        thread = threading.Thread(target=build, name=f"ragsight-view-index-{key.run_id}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _sample(self, ref: str, sample_id: str, order: str) -> Response:
        if order not in ("", "queue"):
            raise ConfigError(f"order must be queue or empty, not '{order}'")
        with self.lock:
            run_id = self.store.resolve_run(ref)
            table = self._table(run_id)
            if sample_id not in table.position:
                raise StoreError(f"no sample '{sample_id}' in run {run_id}")
            sample = self.store.sample(run_id, sample_id)
            scores = self.store.scores(run_id, sample_id).get(sample_id, {})
            calls = self.store.judge_calls(run_id, sample_id)
            labels, _ = read_labels(self.store, run_id, self.field)  # the run's: "next unlabelled" needs them
            keys = self.labels.claim_keys(scores.values())
        body = sample_body(table, sample, scores, calls, labels, order, keys)
        return _html(200, f"ragsight view: {sample_id}", body, self.token)

    def _compare(self, refs: list[str], allow_poor: bool) -> Response:
        with self.lock:
            ids = [self.store.resolve_run(r) for r in refs]
            if len(ids) < 2:
                raise ConfigError("pick two runs or more to compare")
            if len(set(ids)) < len(ids):
                raise ConfigError("a run is picked twice; pick different runs")
            # the oldest run is the baseline (the runs page lists the newest first)
            tables = sorted((self._table(i) for i in ids), key=lambda tb: (tb.info.created_at, tb.run_id))
            key = (tuple((tb.run_id, tb.version) for tb in tables), allow_poor)
            job = self._compared.get(key)
            if job is None:  # computed in a thread: on 20,000 samples it takes seconds
                job = self._compared[key] = _Job(lambda: comparison(tables, allow_poor))
        if not job.done.wait(COMPARE_WAIT_S):
            pairs = max(len(tb) for tb in tables)
            body = (f"<h1>Comparison</h1><p>Comparing {len(tables)} runs on up to {pairs:,} paired samples: "
                    "the permutation tests and bootstraps of <code>ragsight compare</code> take a while on "
                    f"this many (started {time.perf_counter() - job.started:.0f} s ago). This page reloads "
                    'every 2 seconds until they are done.</p><p class="muted" id="computing">computing…</p>')
            response = _html(200, "ragsight view: comparison (computing)", body, self.token)
            response.headers["Refresh"] = "2"
            return response
        if job.error is not None:
            with self.lock:
                self._compared.pop(key, None)  # asked again, it is computed again
            raise job.error
        assert job.value is not None
        cmp, error, moved = job.value
        body = compare_body(tables, cmp, error, job.took, moved)
        return _html(200, "ragsight view: comparison", body, self.token)

    # ---- writes -----------------------------------------------------------------------------

    def _post(self, path: str, headers: Mapping[str, str], body: bytes) -> Response:
        if path != "/api/labels":
            return _json(404, {"error": f"nothing to post at {path}"})
        if headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            return _json(415, {"error": "labels are sent as JSON (Content-Type: application/json)"})
        origin = headers.get("origin")
        host = headers.get("host", "")
        if origin is not None and origin.lower() != f"http://{host}".lower():
            return _json(403, {"error": f"a label must come from this viewer's own pages, not from {origin}"})
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return _json(403, {"error": "a label must come from this viewer's own pages"})
        if self.token is not None and not self._right_token(headers.get("x-ragsight-token")):
            return _json(403, {"error": "a label needs the access token in the X-Ragsight-Token header"})
        if len(body) > MAX_BODY:
            return _json(413, {"error": f"a label request holds at most {MAX_BODY // 1024} kB"})
        try:
            data = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            return _json(400, {"error": f"the body is not JSON: {exc}"})
        if not isinstance(data, dict):
            return _json(400, {"error": "the body must be a JSON object"})
        try:
            with self.lock:
                message = self.labels.write(data, self._table)
        except (ConfigError, InputError, StoreError) as exc:
            return _json(400, {"error": str(exc)})
        return _json(200, {"ok": True, "message": message})

