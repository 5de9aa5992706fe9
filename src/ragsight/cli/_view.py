"""Sub-command ``view``: the local web viewer over a store (ragsight.view)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..errors import StoreError
from ..view import DEFAULT_PORT, make_server
from ._common import EXIT_OK, add_store, err, out, say

__all__ = ["register"]

VIEW_EPILOG = f"""examples:
  ragsight view --store ragsight.db
  ragsight view --store runs.db --port 9000
  ragsight view --store runs.db --host 0.0.0.0 --port 9000
The viewer listens on 127.0.0.1 (this machine only) unless --host names another
address; then it prints an access token, and every request must carry it.
Stop it with Ctrl-C. Default port: {DEFAULT_PORT} (0 takes any free one)."""


def cmd_view(args: argparse.Namespace) -> int:
    if args.store != ":memory:" and not os.path.exists(args.store):
        raise StoreError(f"no store at {args.store}; give the --store file that 'ragsight evaluate' wrote")
    server = make_server(args.store, args.host, args.port, index_path=args.index, field=args.label)
    app = server.app
    try:
        runs = len(app.store.runs())
        address = server.url()
        if app.token is not None:
            say(err, f"warning: the viewer listens on {args.host}, which other machines may reach. Anyone "
                     "with the address below (it holds a one-time access token) can read this store and "
                     "add labels to it; requests without the token are refused.", markup=False)
            address += f"?token={app.token}"
        for note in app.notes:
            say(err, f"note: {note}", markup=False)
        out.print(f"ragsight view: {runs} run(s) in {args.store}", markup=False)
        out.print(f"open {address}", markup=False, soft_wrap=True)
        out.print("Ctrl-C stops it.", markup=False)
        sys.stdout.flush()
        server.serve_forever()
    except KeyboardInterrupt:
        out.print("stopped", markup=False)
    finally:
        server.server_close()
        app.close()
    return EXIT_OK


def register(sub: Any) -> None:
    v = sub.add_parser("view", help="browse, search, compare and label runs in a local web viewer",
                       epilog=VIEW_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_store(v)
    v.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT}; "
                   "0: any free one)")
    v.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only); any other address "
                        "needs the access token printed at start")
    v.add_argument("--index", metavar="PATH",
                   help="where to keep the search index (default: beside the store, STORE.search-index; "
                        ":memory: keeps none)")
    v.add_argument("--label", default="human", metavar="FIELD",
                   help="the label field the viewer writes and shows (default: human; 'ragsight calibrate RUN "
                        "--label FIELD' reads it)")
    v.set_defaults(func=cmd_view)
