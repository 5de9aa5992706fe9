"""Settings for the whole suite.

Property tests (Hypothesis) check correctness, not speed: without a deadline, an example that a
slow or loaded CI machine takes over 200 ms to run is not a failure.

Ctrl-C: a suite started in the background by a shell without job control (``nohup ... &``)
inherits SIGINT ignored, and so does every process it starts; the tests that press Ctrl-C (on
themselves or on a child) then saw nothing happen. The suite takes SIGINT back, and its children
start with it (a handler, unlike an ignored signal, is not inherited across exec)."""

from __future__ import annotations

import signal

from hypothesis import settings

settings.register_profile("ragsight", deadline=None)
settings.load_profile("ragsight")

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
