"""Tests of the real embedded judge. Their fixtures (``qwen_provider``, ``qwen_judge``,
``smollm_provider``: one model loaded per test session) are in tests/model_fixtures.py, shared with
the rest of the suite."""

from __future__ import annotations

from tests.model_fixtures import require as _require

__all__ = ["_require"]
