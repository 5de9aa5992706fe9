"""The command target: ``cmd:COMMAND`` runs the command with the question as JSON on stdin and
reads the JSON answer from its stdout; at the time-out the command and every process it started
are killed together.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
from collections.abc import Mapping, Sequence
from typing import Any

from ..calls import redact
from ..errors import ConfigError
from ._reply import _MISSING, TargetError, TargetReply, env_secrets, reply_from
from ._target_http import MAX_REPLY_BYTES, HttpFields

__all__ = ["CommandTarget"]


class CommandTarget:
    """``cmd:python my_rag.py``: question as JSON on stdin, JSON answer on stdout."""

    def __init__(
        self,
        command: str,
        timeout: float = 60.0,
        fields: HttpFields | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self.config = dict(config or {})
        self.argv = shlex.split(command)
        if not self.argv:
            raise ConfigError("target 'cmd:' needs a command, e.g. cmd:python my_rag.py")
        self.name = f"cmd:{command}"
        self.timeout = timeout
        self.fields = fields or HttpFields()

    async def __call__(self, question: str, history: Sequence[Mapping[str, Any]] | None = None) -> TargetReply:
        try:
            # its own process group: at the time-out the command and every child it started are
            # killed together (a child holding stdout would otherwise outlive it, and hold the call)
            proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=hasattr(os, "killpg"),
            )
        except (OSError, ValueError) as exc:
            raise TargetError(f"{self.name}: cannot start ({exc})", retryable=False) from exc
        message: dict[str, Any] = {"question": question}
        if history is not None:
            message["history"] = [dict(m) for m in history]
        if self.config:
            message["config"] = self.config
        payload = json.dumps(message).encode()
        try:
            out, err = await asyncio.wait_for(_talk(proc, payload), timeout=self.timeout)
        except asyncio.TimeoutError:
            await _kill_group(proc)
            raise TargetError(
                f"{self.name}: no answer within {self.timeout:g} s", retryable=True
            ) from None
        except BaseException:
            await _kill_group(proc)
            raise
        await _kill_group(proc)  # what it left running in the background
        if out is None:
            raise TargetError(f"{self.name}: printed more than {MAX_REPLY_BYTES // 2**20} MB; it was stopped "
                              "there and its output not used", retryable=False)
        if proc.returncode != 0:
            tail = " ".join(redact(err.decode("utf-8", "replace"), env_secrets()).split())[-300:]
            raise TargetError(
                f"{self.name}: exited with status {proc.returncode}"
                + (f": {tail}" if tail else ""),
                retryable=False,
            )
        text = out.decode("utf-8", "replace").strip()
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            # allow log lines before the answer: take the last line that parses
            data = _MISSING
            for line in reversed(text.splitlines()):
                try:
                    data = json.loads(line)
                    break
                except json.JSONDecodeError:
                    continue
            if data is _MISSING:
                raise TargetError(
                    f"{self.name}: printed no JSON: {text[:120]!r}", retryable=False
                ) from None
        f = self.fields
        return reply_from(
            data,
            answer_field=f.answer,
            contexts_field=f.contexts,
            context_text_field=f.context_text,
            context_id_field=f.context_id,
            where=self.name,
        )


_ERR_TAIL = 64 * 1024


async def _talk(proc: asyncio.subprocess.Process, payload: bytes) -> tuple[bytes | None, bytes]:
    """Write ``payload`` to the command's stdin and read its stdout (None when it printed more
    than :data:`MAX_REPLY_BYTES`: the command is killed then) and the end of its stderr, all at
    once (a command may print before it reads), then wait for it to end."""

    async def feed() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(payload)
            await proc.stdin.drain()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.close()

    async def read_out() -> bytes | None:
        assert proc.stdout is not None
        chunks: list[bytes] = []
        size = 0
        while chunk := await proc.stdout.read(65536):
            size += len(chunk)
            if size > MAX_REPLY_BYTES:
                await _kill_group(proc)
                return None
            chunks.append(chunk)
        return b"".join(chunks)

    async def read_err() -> bytes:
        assert proc.stderr is not None
        tail = b""
        while chunk := await proc.stderr.read(65536):
            tail = (tail + chunk)[-_ERR_TAIL:]
        return tail

    _, out, err = await asyncio.gather(feed(), read_out(), read_err())
    await proc.wait()
    return out, err


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """Kill ``proc`` and every process of its group (started with ``start_new_session``), then
    reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        elif proc.returncode is None:
            proc.kill()
    with contextlib.suppress(ProcessLookupError):
        await proc.wait()
