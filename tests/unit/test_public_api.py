"""Every package's ``__all__``: sorted, resolvable, and naming what its private modules export; the
renamed providers' old names still work, with a warning."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import ragsight

PACKAGES = [*sorted(m.name for m in pkgutil.iter_modules(ragsight.__path__, "ragsight.") if m.ispkg),
            "ragsight"]


def _isort_key(name: str) -> tuple[int, str]:
    """Constants, then classes, then functions, each alphabetical (ruff's RUF022 order)."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_and_resolvable(name: str) -> None:
    mod = importlib.import_module(name)
    names = list(getattr(mod, "__all__", []))
    assert names, f"{name} has no __all__"
    assert names == sorted(names, key=_isort_key), f"{name}.__all__ is not sorted"
    for n in names:
        assert getattr(mod, n, None) is not None, f"{name}.__all__ names {n}, which it lacks"


@pytest.mark.parametrize(("old", "new"), [
    ("OpenAIJudge", "OpenAIProvider"), ("LocalJudge", "LocalProvider"), ("ScriptedJudge", "ScriptedProvider"),
])
def test_old_provider_names_warn_and_still_work(old: str, new: str) -> None:
    from ragsight import judge

    with pytest.warns(DeprecationWarning, match=f"{old} is now {new}"):
        cls = getattr(judge, old)
    assert cls is getattr(judge, new)
    with pytest.raises(AttributeError):
        judge.NoSuchJudge  # noqa: B018


def test_top_level_scripted_judge_alias() -> None:
    with pytest.warns(DeprecationWarning):
        assert ragsight.ScriptedJudge is ragsight.ScriptedProvider  # type: ignore[attr-defined]


def test_answer_is_listed_and_run_still_works_unlisted(capsys: pytest.CaptureFixture[str]) -> None:
    from ragsight.cli import main

    with pytest.raises(SystemExit):
        main(["--help"])
    listing = capsys.readouterr().out
    assert "answer" in listing and "    run " not in listing
    for name in ("answer", "run"):
        with pytest.raises(SystemExit) as exc:
            main([name, "--help"])
        assert exc.value.code == 0
        assert "ragsight answer ts.jsonl" in capsys.readouterr().out
