"""Race-free file access for Write and Edit: every component opened from a directory handle.

A path is checked (resolved, symlinks and `..` included) before it is written; a process that
swaps a folder of that path for a symlink between the check and the write must not redirect
the write. So the write never goes through the path string again: starting from the
workspace's directory handle (or `/` for a path outside it that was allowed), each folder is
opened with `O_NOFOLLOW | O_DIRECTORY` relative to the previous one, and the file is read, its
temporary written and renamed relative to the last handle. A symlink met on the way — which a
resolved path cannot hold, so it appeared since — is refused with a clear error and nothing
is written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from comal.errors import ToolError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_SWAPPED = (errno.ELOOP, errno.ENOTDIR)


def _start(workspace: Path, resolved: Path) -> tuple[Path, tuple[str, ...]]:
    """The folder to start from and the components below it (the last one is the file)."""
    root = workspace.resolve()
    if resolved.is_relative_to(root) and resolved != root:
        return root, resolved.relative_to(root).parts
    return Path(resolved.anchor), resolved.parts[1:]


@contextlib.contextmanager
def parent_handle(workspace: Path, resolved: Path, *, create: bool) -> Iterator[int | None]:
    """A handle on the folder that holds `resolved`, opened component by component.

    Yields None when a folder is missing and `create` is False (the file does not exist).

    Raises:
        ToolError: a component is a symlink or not a folder (it changed since the check), or
            a folder cannot be opened or created.
    """
    base, parts = _start(workspace, resolved)
    if not parts:
        raise ToolError(f"{resolved} is a directory")
    try:
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise ToolError(f"cannot open {base}: {exc.strerror or exc}") from exc
    try:
        walked = base
        for name in parts[:-1]:
            walked = walked / name
            try:
                child = _open_dir(fd, name, walked, create=create)
            except FileNotFoundError:
                yield None
                return
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _open_dir(fd: int, name: str, shown: Path, *, create: bool) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as exc:
        raise _refusal(exc, fd, name, shown) from exc
    try:
        os.mkdir(name, 0o777, dir_fd=fd)
    except FileExistsError:
        pass  # made meanwhile: opened (and checked) below like any other
    except OSError as exc:
        raise ToolError(f"cannot create {shown}: {exc.strerror or exc}") from exc
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        raise _refusal(exc, fd, name, shown) from exc


def _refusal(exc: OSError, fd: int, name: str, shown: Path) -> ToolError:
    if exc.errno in _SWAPPED:
        try:
            plain_file = stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
        except OSError:
            plain_file = False
        if exc.errno == errno.ENOTDIR and plain_file:
            return ToolError(f"{shown} is a file, not a folder; nothing written")
        return ToolError(
            f"{shown} is no longer a plain folder (a symlink or a file took its place since "
            "the path was checked); nothing written"
        )
    return ToolError(f"cannot open {shown}: {exc.strerror or exc}")


def read_in(parent: int | None, resolved: Path) -> bytes | None:
    """The bytes of the file `resolved` in folder `parent`; None when it does not exist.

    Raises:
        ToolError: it is a symlink (it changed since the check), a folder or not a regular
            file, or it cannot be read.
    """
    if parent is None:
        return None
    try:
        fd = os.open(
            resolved.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent
        )
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ToolError(
                f"{resolved} is a symlink now (it was not when the path was checked); "
                "nothing written"
            ) from exc
        if exc.errno == errno.EISDIR:
            raise ToolError(f"{resolved} is a directory") from exc
        raise ToolError(f"{resolved}: cannot read: {exc.strerror or exc}") from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise ToolError(f"{resolved} is {kind}")
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def replace_in(parent: int, resolved: Path, data: bytes) -> None:
    """Replace the file `resolved` in folder `parent` with `data`, atomically and durably.

    A temporary file is written beside it (`O_EXCL | O_NOFOLLOW` on a random name), flushed,
    given the old file's permission bits, renamed over it relative to `parent` (a symlink put
    there meanwhile is replaced, never followed) and the folder is flushed.

    Raises:
        ToolError: the write failed; the file is as it was.
    """
    name = resolved.name
    try:
        old = os.stat(name, dir_fd=parent, follow_symlinks=False)
        mode: int | None = stat.S_IMODE(old.st_mode) if stat.S_ISREG(old.st_mode) else None
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise ToolError(f"cannot write {resolved}: {exc.strerror or exc}") from exc
    tmp = f".{name}.{secrets.token_hex(6)}.comal-tmp"
    try:
        # O_EXCL on a random name: never clobbers another file; 0o666 lets the umask apply.
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666,
            dir_fd=parent,
        )  # fmt: skip
    except OSError as exc:
        raise ToolError(f"cannot write {resolved}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
        os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=parent)
        raise ToolError(f"cannot write {resolved}: {exc.strerror or exc}") from exc
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=parent)
        raise
    # The rename is durable only once the folder entry is flushed.
    os.fsync(parent)
