"""Settings for the whole suite.

Property tests (Hypothesis) check correctness, not speed: without a deadline, an example that a
slow or loaded CI machine takes over 200 ms to run is not a failure."""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("ragsight", deadline=None)
settings.load_profile("ragsight")
