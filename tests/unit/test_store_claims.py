"""Store.claim / Store.release: a lease on a piece of work shared by processes (a sweep's
configuration or test set), held by one store at a time, given back on release or close, and
taken over when its holder's process is gone."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from pathlib import Path

from ragsight.store import Store


def test_a_claim_is_held_by_one_store_until_released(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store(path) as a, Store(path) as b:
        assert a.claim("cfg-1") is None
        assert a.claim("cfg-1") is None  # the holder may claim again
        holder = b.claim("cfg-1")
        assert holder is not None and holder.endswith(f":{os.getpid()}")
        assert b.claim("cfg-2") is None  # another name is free
        a.release("cfg-1")
        assert b.claim("cfg-1") is None
        assert a.claim("cfg-1") is not None
    with Store(path) as c:  # closing a store gives its claims back
        assert c.claim("cfg-1") is None and c.claim("cfg-2") is None


def test_a_claim_of_a_dead_process_is_taken_over_at_once(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store(path):
        pass
    conn = sqlite3.connect(path)
    # a holder on this machine whose process no longer exists (pid 2**22 + 1 is above pid_max)
    dead = f"{socket.gethostname()}:abcdef:{2**22 + 1}"
    conn.execute("INSERT INTO cache (key, entry, created_at) VALUES (?,?,?)",
                 ("claim/cfg-1", json.dumps({"owner": dead}), time.time()))
    conn.commit()
    conn.close()
    with Store(path) as st:
        assert st.claim("cfg-1") is None
