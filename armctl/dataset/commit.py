"""Crash-consistent saves of a dataset folder: every save's files become visible together, or none of them.

LeRobot's readers take every ``data/*/*.parquet`` and ``meta/episodes/*/*.parquet`` they find and trust
``meta/info.json``'s totals, so no order of writing files one by one is safe against a kill (a data file one
episode ahead of info.json was the result). A save therefore happens aside and is published in one step:

1. the dataset's tree is rebuilt in a staging folder beside it (``.<name>.armctl-<pid>-<tag>/next``): every file
   hard-linked (no copy), then the files of the save written there (each written whole, fsynced, renamed in);
2. the staging folder and the dataset folder are swapped in one atomic step (Linux ``renameat2`` with
   ``RENAME_EXCHANGE``), the folder above fsynced: this is the commit point;
3. the old tree (now in the staging folder's place) is removed.

A kill before step 2 leaves the dataset as it was (every episode saved before); after it, the dataset with
the new episode. A full disk or a file size limit fails in step 1, with the dataset untouched. The staging
folder of a process that died is removed when the dataset is next opened (``clean_orphans``).

Where the swap cannot be made (not Linux, a folder above that is not writable, the dataset folder a mount
point, a file system without hard links), files are written in place, ``info.json`` last (the commit record),
and the next open rolls back what a kill left beyond it (``armctl.dataset.writer.DatasetWriter``).
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path

from armctl.errors import StorageError

RENAME_EXCHANGE = 2  # linux/fs.h
AT_FDCWD = -100
SCRATCH = re.compile(r"\.armctl-(\d+)-[0-9a-f]+$")  # <prefix>.armctl-<pid>-<tag>
# where the swap cannot work, not a fault of the disk: the caller writes in place instead
NO_SWAP = {errno.ENOSYS, errno.EINVAL, errno.EXDEV, errno.EBUSY, errno.EPERM, errno.EMLINK, errno.ENOTSUP}
WHY = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EFBIG: "the file size limit (ulimit -f) is reached",
    errno.EROFS: "the folder is read-only",
    errno.EACCES: "no permission to write",
    errno.EPERM: "no permission to write",
}


def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except (OSError, TypeError):  # Windows: no C library of the process to ask
        return None


def exchange(a: Path, b: Path) -> None:
    """Swap folders ``a`` and ``b`` atomically (each name then holds the other's tree). OSError if this system
    or file system cannot (ENOSYS where there is no ``renameat2``)."""
    libc = _libc()
    fn = getattr(libc, "renameat2", None) if libc is not None else None
    if fn is None:
        raise OSError(errno.ENOSYS, "no renameat2 on this system", str(a))
    if fn(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), str(a), None, str(b))


def fsync_dir(path: Path) -> None:
    """Make a folder's entries durable (a no-op where folders cannot be opened, e.g. Windows)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def os_errno(exc: BaseException) -> int | None:
    """The errno of an OSError (pyarrow and PyAV put it in the message at times)."""
    if getattr(exc, "errno", None):
        return exc.errno
    m = re.search(r"errno (\d+)", str(exc), re.IGNORECASE)
    return int(m.group(1)) if m else None


def storage_error(root, what: str, exc: BaseException, kept: str) -> StorageError:
    """One line: the dataset, what could not be written and why, and what the dataset keeps."""
    code = os_errno(exc)
    why = WHY.get(code) or (os.strerror(code) if code else str(exc))
    return StorageError(f"dataset {root}: {why} ({what}); {kept}")


def _alive(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":  # Windows: os.kill(pid, 0) would send Ctrl-C, not ask
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def clean_orphans(root: Path) -> None:
    """Remove the staging and work folders that dead recording sessions left beside ``root`` and in it."""
    root = root.resolve()
    places = [(root.parent, f".{root.name}.armctl-"), (root, ".armctl-")]
    for folder, prefix in places:
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for p in entries:
            if not p.name.startswith(prefix) or not p.is_dir() or p.is_symlink():
                continue
            m = SCRATCH.search(p.name)
            if m is None or not _alive(int(m.group(1))):  # no pid: left by armctl before 34
                shutil.rmtree(p, ignore_errors=True)


class Publisher:
    """The saves of one recording session into ``root`` (an existing folder): ``work`` is where the session
    keeps its episodes' video until saved; ``commit(write)`` runs ``write(folder)``, which writes the save's files
    into ``folder``, and publishes them together (``swap`` True) or in place (``swap`` False)."""

    def __init__(self, root: Path):
        self.root = root
        self.real = root.resolve()
        tag = f"armctl-{os.getpid()}-{secrets.token_hex(4)}"
        self.swap = True
        try:
            self.scratch = self.real.parent / f".{self.real.name}.{tag}"
            self.scratch.mkdir()
        except OSError:  # the folder above is not ours to write: keep the work inside the dataset folder
            self.swap = False
            self.scratch = self.real / f".{tag}"
            self.scratch.mkdir()
        self.work = self.scratch / "work"
        self.work.mkdir()

    def commit(self, write: Callable[[Path], None]) -> None:
        if self.swap:
            try:
                self._commit_swap(write)
                return
            except _NoSwap:
                self.swap = False
        write(self.root)

    def _commit_swap(self, write: Callable[[Path], None]) -> None:
        stage = self.scratch / "next"
        shutil.rmtree(stage, ignore_errors=True)
        try:
            try:
                _link_tree(self.real, stage)
            except OSError as exc:
                if exc.errno in NO_SWAP:
                    raise _NoSwap from exc
                raise
            write(stage)
            for d, _, _ in os.walk(stage):
                fsync_dir(Path(d))
            try:
                exchange(stage, self.real)
            except OSError as exc:
                if exc.errno in NO_SWAP:
                    raise _NoSwap from exc
                raise
            fsync_dir(self.real.parent)
        finally:
            shutil.rmtree(stage, ignore_errors=True)  # the old tree after the swap; the unpublished one else

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)


class _NoSwap(Exception):
    """The swap is not possible here (not a fault of the disk): write in place."""


def _link_tree(src: Path, dst: Path) -> None:
    """``dst`` a copy of the tree ``src`` made of hard links (folders made anew with their modes); the work
    folders of recording sessions (``.armctl-*``) left out."""
    dst.mkdir(mode=0o700)
    shutil.copymode(src, dst)
    for folder, dirs, files in os.walk(src):
        rel = Path(folder).relative_to(src)
        if rel == Path("."):
            dirs[:] = [d for d in dirs if not d.startswith(".armctl-")]
        links = [d for d in dirs if (Path(folder) / d).is_symlink()]
        dirs[:] = [d for d in dirs if d not in links]
        for d in dirs:
            (dst / rel / d).mkdir()
            shutil.copymode(Path(folder) / d, dst / rel / d)
        for f in files + links:
            os.link(Path(folder) / f, dst / rel / f, follow_symlinks=False)
