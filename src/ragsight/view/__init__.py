"""``ragsight view``: a local web application over a run store, to read runs, compare them,
search and filter their samples, follow a score's evidence trail and label it.

Standard library only (``http.server``, SQLite FTS5); no build step, no CDN. See docs/review.md.
"""

from ._app import COOKIE, Response, ViewApp
from ._labels import FIELD, LabelWriter, read_labels
from ._model import OUTCOMES, SORTS, Filter, RunTable, Tables, informativeness
from ._search import RunKey, SearchIndex, fts_query, index_path_for
from ._server import DEFAULT_PORT, ViewServer, is_loopback, make_server, new_token

__all__ = [
    "COOKIE",
    "DEFAULT_PORT",
    "FIELD",
    "OUTCOMES",
    "SORTS",
    "Filter",
    "LabelWriter",
    "Response",
    "RunKey",
    "RunTable",
    "SearchIndex",
    "Tables",
    "ViewApp",
    "ViewServer",
    "fts_query",
    "index_path_for",
    "informativeness",
    "is_loopback",
    "make_server",
    "new_token",
    "read_labels",
]
