"""Where the bench scripts find the shared kit, the human-labelled sets and their call caches.

The kit lives in a folder ``shared`` beside the repository (``../shared``), or beside the
folder that holds a worktree (``../../shared``); an environment variable overrides each. The
caches of judge outputs go to a folder ``cache`` beside that ``shared`` folder."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def shared() -> Path:
    """The ``shared`` folder beside the repository (or beside its worktree's parent)."""
    for base in (ROOT.parent, ROOT.parent.parent):
        if (base / "shared").is_dir():
            return base / "shared"
    return ROOT.parent / "shared"


def kit() -> Path:
    """The bench kit: ``$RAGSIGHT_KIT`` (or ``$RAGSIGHT_BENCH_KIT``), else ``shared/bench``."""
    env = os.environ.get("RAGSIGHT_KIT") or os.environ.get("RAGSIGHT_BENCH_KIT")
    return Path(env) if env else shared() / "bench"


def metaeval() -> Path:
    """The human-labelled sets: ``$RAGSIGHT_METAEVAL``, else ``shared/metaeval``."""
    env = os.environ.get("RAGSIGHT_METAEVAL")
    return Path(env) if env else shared() / "metaeval"


def cache(name: str) -> Path:
    """A cache folder of judge outputs: ``$RAGSIGHT_VALIDITY_CACHE`` for ``validity``,
    ``$RAGSIGHT_ABSTENTION_CACHE``'s folder for ``abstention``, else ``cache/NAME`` beside
    ``shared``."""
    env = os.environ.get("RAGSIGHT_VALIDITY_CACHE") if name == "validity" else None
    return Path(env) if env else shared().parent / "cache" / name
