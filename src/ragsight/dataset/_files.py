"""Reading and writing files: TOML read with one wording of its errors, strict JSON, and atomic
replacement.

- :func:`read_toml` reads a TOML file the user wrote (a config, rubrics); a file that cannot be
  read or is not TOML is a ConfigError naming what the file is for and where it is;

- :func:`strict_json` writes JSON that every parser accepts: a non-finite float (NaN, Infinity),
  which Python's ``json`` would write as a bare ``NaN`` token, becomes ``null``;
- :func:`atomic_write` writes to a temporary file beside the target and renames it over the
  target only when the writing succeeded, so a reader (or a later run) never finds half a file,
  and a write killed midway leaves the previous file as it was.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import ConfigError

__all__ = ["atomic_path", "atomic_write", "check_writable_target", "finite", "read_toml", "same_file",
           "strict_json", "write_failure"]


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """The TOML document in ``path``. ``what`` names the file for the user ("config file",
    "rubric file"): a file that cannot be read, is not UTF-8, is not valid TOML or nests too deeply
    to read raises ConfigError ("cannot read the config file PATH: ...", "the config file PATH is
    not valid TOML: ...")."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10 (tomli is a dependency there)
        import tomli as tomllib
    try:
        with path.open("rb") as f:
            data = f.read()
    except OSError as exc:
        raise ConfigError(f"cannot read the {what} {path}: {exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ConfigError(f"the {what} {path} is not UTF-8 (byte 0x{data[exc.start]:02x} on line {line}); TOML "
                          "files are UTF-8: save it as UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"the {what} {path} is not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"the {what} {path} nests arrays or tables too deeply to read") from None


def finite(value: Any) -> Any:
    """``value`` with every non-finite float (at any depth of dicts, lists and tuples) as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def strict_json(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` that never writes ``NaN``/``Infinity`` (they become ``null``).

    Values that are not JSON types are written with ``str`` (``default=str``), as the store does.
    """
    kwargs.setdefault("ensure_ascii", False)
    kwargs.setdefault("default", str)
    try:
        return json.dumps(value, allow_nan=False, **kwargs)
    except ValueError:  # a NaN or an infinity somewhere: replace them (rare, so only then)
        return json.dumps(finite(value), allow_nan=False, **kwargs)


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two names lead to one file: the same file on disk where both exist (a hard link,
    a symbolic link, another spelling of the path), else the same resolved real path (a file
    not made yet, such as a store the run is about to create)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        pass
    try:
        return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))
    except (OSError, ValueError):
        return False


def check_writable_target(path: str | os.PathLike[str], what: str = "output file",
                          reads: Iterable[tuple[str, str | os.PathLike[str] | None]] = ()) -> Path:
    """Check, before long work, that ``path`` can be written the way :func:`atomic_write` writes
    it: its folder exists, is a folder and takes a new file; ``path`` itself is a regular file
    that may be written, or does not exist yet (a folder, a device, a pipe or a socket is
    refused); and it is none of the files the command reads or keeps, ``reads`` (pairs of what
    the file is, "the store", and its path; None is skipped), which writing would replace.
    Returns the path.

    Raises an ``OSError`` (FileNotFoundError, NotADirectoryError, IsADirectoryError,
    PermissionError, FileExistsError) with a one-line message naming the path, for the caller to
    turn into its own error type.
    """
    target = Path(path)
    if not str(path).strip():
        raise FileNotFoundError(f"the {what} is an empty name; give a file name")
    for label, other in reads:
        if other is not None and str(other) not in ("", ":memory:") and same_file(target, other):
            spelled = "" if str(other) == str(path) else f" ({other})"
            raise FileExistsError(f"the {what} {target} is {label}{spelled}; writing it would replace "
                                  "that file: give another file name")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.exists():
        raise FileNotFoundError(f"the folder of the {what} {target} does not exist ({parent})")
    if not parent.is_dir():
        raise NotADirectoryError(f"the folder of the {what} {target} is not a folder ({parent})")
    if target.is_dir():
        raise IsADirectoryError(f"the {what} {target} is a folder; give a file name")
    if target.exists() and not target.is_file():
        raise FileExistsError(f"the {what} {target} exists and is not a regular file (a device, a pipe "
                              "or a socket); give a file name")
    if target.is_file() and not os.access(target, os.W_OK):
        raise PermissionError(f"the {what} {target} is read-only; give another name or make it writable")
    try:  # the one sure test that the folder takes the temporary file of atomic_write
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise PermissionError(f"cannot create a file in the folder {parent} of the {what} {target} "
                              f"({exc.strerror or exc})") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return target


def write_failure(path: str | os.PathLike[str], exc: OSError, what: str = "output file") -> str:
    """A one-line message for a write that failed although the check passed (a full disk, a
    folder removed meanwhile): names the file and says the previous one is intact."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"cannot write the {what} {path} ({reason}); nothing was written there (a previous file is intact)"


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike[str], mode: str = "w", *, encoding: str | None = "utf-8",
    newline: str | None = None,
) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path`` for writing; on a clean exit flush it to disk and
    rename it to ``path`` (atomic on POSIX and Windows). On an error the temporary file is
    removed and ``path`` is left untouched."""
    target = Path(path)
    binary = "b" in mode
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, mode, encoding=None if binary else encoding,
                       newline=None if binary else newline) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        _keep_mode(target, tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path`` for a writer that wants a file name (pandas, pyarrow);
    renamed to ``path`` on a clean exit, removed on an error."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        _keep_mode(target, tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _keep_mode(target: Path, tmp: str) -> None:
    # mkstemp makes the file 0600; give it the mode an ordinary open() would (or the old file's)
    try:
        mode = target.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    with contextlib.suppress(OSError):
        os.chmod(tmp, mode)
