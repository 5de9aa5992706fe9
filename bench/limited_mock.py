"""The benchmark kit's mock (``shared/bench/mock_openai.py``) with a capacity: any chat completion
beyond ``--capacity`` calls in flight is answered at once with HTTP 429 (no Retry-After, as a proxy
in front of a small deployment answers), and counted in ``/stats`` as ``refused``.

    .venv-ragas/bin/python bench/limited_mock.py --kit ../shared/bench --capacity 8 --port 8765

Run with a Python that has the mock's dependencies (aiohttp, tiktoken, numpy: the ragas
environment). Everything else is the kit's mock unchanged.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kit", type=Path, required=True, help="the folder of mock_openai.py")
    ap.add_argument("--capacity", type=int, required=True, help="chat calls accepted at once")
    ap.add_argument("--port", type=int, default=8765)
    args = ap.parse_args()
    sys.path.insert(0, str(args.kit.resolve()))
    import mock_openai as mock
    from aiohttp import web

    in_flight = 0
    reset = mock.reset_stats

    def reset_stats() -> None:
        reset()
        mock.STATE["stats"]["refused"] = 0

    async def chat(request: web.Request) -> Any:
        nonlocal in_flight
        if in_flight >= args.capacity:
            mock.STATE["stats"]["refused"] = mock.STATE["stats"].get("refused", 0) + 1
            return web.json_response(
                {"error": {"message": f"more than {args.capacity} requests in flight",
                           "type": "rate_limit_exceeded", "code": "rate_limit_exceeded"}}, status=429)
        in_flight += 1
        try:
            return await served(request)
        finally:
            in_flight -= 1

    served = mock.chat
    mock.reset_stats = reset_stats
    mock.chat = chat  # main() looks the handlers up when it builds the app
    reset_stats()
    sys.argv = [sys.argv[0], "--port", str(args.port)]
    mock.main()


if __name__ == "__main__":
    main()
