"""Sub-command ``runs``: the runs of a store, newest first."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.text import Text

from ..calls import format_usd
from ..report import count_noun as _count
from ._common import EXIT_OK, out, piped_at_80
from ._common import add_store as _add_store
from ._common import open_existing as _open_existing

__all__ = ["register"]


def register(sub: Any) -> None:
    rs = sub.add_parser("runs", help="list the runs in the store")
    _add_store(rs)
    rs.set_defaults(func=cmd_runs)


def cmd_runs(args: argparse.Namespace) -> int:
    """The runs of a store, newest first, each a block that reads at 80 columns: a line of
    fixed-width fields, then its judge and metrics, then its metadata (wrapped at spaces)."""
    import datetime as dt

    from rich.padding import Padding

    with _open_existing(args.store) as store, piped_at_80(out):
        runs = store.runs()
        out.print(f"{_count(len(runs), 'run')} in {args.store}, newest first:", markup=False)
        for r in runs:
            n = store.conn.execute("SELECT COUNT(*) FROM samples WHERE run_id=?", (r.id,)).fetchone()[0]
            created = dt.datetime.fromtimestamp(r.created_at).strftime("%Y-%m-%d %H:%M")
            out.print(Text.assemble((r.id, "bold"), f"  {r.status:<11}  {n:>5} samples  created {created}"))
            cost = r.stats.get("cost") if isinstance(r.stats, dict) else None
            paid = f"; cost {format_usd(cost.get('usd'))}" if isinstance(cost, dict) else ""
            what = f"judge {r.judge or '–'}; {len(r.metric_keys)} metrics: {', '.join(r.metric_keys)}{paid}"
            out.print(Padding(Text(what), (0, 0, 0, 2)))
            if r.metadata:
                meta = " ".join(f"{k}={_fmt_meta(v)}" for k, v in r.metadata.items())
                out.print(Padding(Text(meta, style="dim"), (0, 0, 0, 2)))
    return EXIT_OK


def _fmt_meta(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
