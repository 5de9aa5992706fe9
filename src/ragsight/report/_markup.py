"""HTML escaping shared by the report's pages, plots and evidence marks."""

from __future__ import annotations

import html
from typing import Any

__all__ = ["e"]


def e(value: Any) -> str:
    """Escape any value for HTML text or attribute content."""
    return html.escape(str(value), quote=True)
