"""A prompt's text may change only with its version: the checked-in table of (id, version, hash)
fails when a hash moves and the version does not.

Runs recorded with a prompt version are compared across time ("faithfulness v2 on March's run vs
today's"); an edit that keeps the version would make two different prompts look the same. When
you edit a prompt on purpose, raise its ``version:`` header and update the table with:

    python -m tests.unit.test_prompt_versions
"""

from __future__ import annotations

import json
from pathlib import Path

from ragsight.prompts import load_prompt, prompt_ids

TABLE = Path(__file__).resolve().parents[1] / "fixtures" / "golden" / "prompt_versions.json"


def current() -> dict[str, list[str]]:
    return {pid: [load_prompt(pid).version, load_prompt(pid).hash] for pid in sorted(prompt_ids())}


def drift(recorded: dict[str, list[str]], now: dict[str, list[str]]) -> list[str]:
    problems = []
    for pid, (version, digest) in now.items():
        if pid not in recorded:
            problems.append(f"{pid}: new prompt, not in the table (add it)")
            continue
        old_version, old_digest = recorded[pid]
        if digest != old_digest and version == old_version:
            problems.append(f"{pid}: text or schema changed but version is still {version} (raise it)")
        elif digest != old_digest or version != old_version:
            problems.append(f"{pid}: v{old_version} -> v{version}; update the table")
    problems += [f"{pid}: in the table but no longer shipped" for pid in recorded if pid not in now]
    return problems


def test_no_prompt_changed_without_its_version() -> None:
    recorded = json.loads(TABLE.read_text(encoding="utf-8"))
    problems = drift(recorded, current())
    assert not problems, "\n".join(problems)


def test_the_check_names_an_edit_that_kept_its_version() -> None:
    now = current()
    recorded = {pid: list(v) for pid, v in now.items()}
    recorded["extract_claims"][1] = "0" * 16  # the text changed, the version did not
    assert drift(recorded, now) == [
        f"extract_claims: text or schema changed but version is still {now['extract_claims'][0]} (raise it)"
    ]
    recorded = {pid: list(v) for pid, v in now.items()}
    del recorded["verify_claims"]
    assert drift(recorded, now) == ["verify_claims: new prompt, not in the table (add it)"]


if __name__ == "__main__":
    TABLE.write_text(json.dumps(current(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {TABLE}")
