"""Submissions are plain files in their folder: links and special files are refused wherever a submission is read.

A learner decides what the names in their submission are, so a name may point anywhere: a symbolic link to the
course's ``solutions/`` or ``gradebook.db``, a hard link to one of them (the same file under a second name; a plain
file with more than one name is refused, since its other name may lie outside the submission), a device file, a
FIFO or a socket (reading one blocks, or does what the device does). Whoever then reads the submission (the
grader, ``nbgrader collect`` with the instructor's rights) would read what the name points to. Everything here
looks at names without following them (``lstat``, folders opened by descriptor with ``O_NOFOLLOW``, each file
opened with ``O_NOFOLLOW`` from its folder's descriptor and checked again on the open file), so what is checked is
what is read, even if the learner renames files meanwhile:

- :func:`refusal` says why one path is refused (None for a plain file, a folder or a path that does not exist);
- :func:`offending` walks a folder and returns every entry refused, with why (the folder itself included);
- :func:`read_plain` reads one file (``InputError`` naming the field and the file for a refused one);
- :func:`copy_plain` copies a folder's plain files and returns (and logs) what it refused.

:mod:`.submission` (``gpucost-lab grade``), :mod:`.classes` (``grade-class``), :func:`.run.copy_submission`
(what goes into the sandbox) and :mod:`.exchange` (``nbgrader collect``) use them.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path, PurePath

from gpucost_lab._validate import InputError

ALLOWED = "allowed: plain files and folders (no symbolic or hard links, device files, FIFOs or sockets)"

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO put in a file's place between the check and the open does not block the reader
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
MAX_DEPTH = 32  # folders in folders: deeper ones are refused, not walked (each level holds a descriptor open)


@dataclasses.dataclass(frozen=True)
class Refused:
    """An entry of a submission that is not read: its path and why (``"a FIFO (named pipe)"``)."""

    path: Path
    why: str

    def __str__(self) -> str:
        return f"{self.path} is {self.why}"


def _why(st: os.stat_result, path: Path, root: Path | None = None, target: str | None = None) -> str | None:
    """Why the entry ``st`` (an ``lstat``) at ``path`` is refused, or None; ``target``: a symbolic link's."""
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        if target is None:
            return "a symbolic link"
        inside = False
        if root is not None:  # where the link points, read as text: nothing is followed
            top = os.path.abspath(root)
            inside = os.path.commonpath([os.path.abspath(os.path.join(path.parent, target)), top]) == top
        return f"a symbolic link to {target!r}" + ("" if inside else " (outside the submission)")
    if stat.S_ISDIR(mode):
        return None
    if stat.S_ISREG(mode):
        if st.st_nlink == 1:
            return None
        return f"a hard link (one file with {st.st_nlink} names; another may lie outside the submission)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"


def _readlink(name: str, dir_fd: int | None) -> str | None:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None


def refusal(path: str | os.PathLike) -> Refused | None:
    """Why ``path`` itself is refused (a symbolic link, a hard link, a special file), or None: a plain file, a folder,
    or a path that does not exist (its reader says so). Links in the folders above it are not looked at."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    target = _readlink(str(path), None) if stat.S_ISLNK(st.st_mode) else None
    why = _why(st, path, None, target)
    return Refused(path, why) if why else None


def _walk(root: Path, keep: Callable[[PurePath, os.stat_result], bool] | None) -> Iterator[tuple]:
    """``(path, relative, lstat, why, dir_fd, name)`` for ``root`` (relative ``.``) and each entry under it, depth-first
    in name order (the order of ``sorted(root.rglob("*"))``); ``dir_fd`` is the open folder holding ``name``, valid
    until the next item. A folder is entered only if it is a folder of its own (not a link) and ``keep`` allows it;
    an entry ``keep`` declines is not yielded."""
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        target = _readlink(str(root), None) if stat.S_ISLNK(st.st_mode) else None
        yield root, PurePath("."), st, _why(st, root, None, target) or "not a folder", None, None
        return
    try:
        fd = os.open(root, _DIR_FLAGS)
    except OSError as err:  # replaced by a link since the lstat (ELOOP), or unreadable
        yield root, PurePath("."), st, f"a folder that could not be opened ({err.strerror or err})", None, None
        return
    try:
        if not os.path.samestat(st, os.fstat(fd)):
            yield root, PurePath("."), st, "a folder that changed while it was read", None, None
            return
        yield from _entries(fd, root, PurePath(), root, keep, 1)
    finally:
        os.close(fd)


def _entries(dir_fd: int, folder: Path, rel: PurePath, root: Path, keep, depth: int) -> Iterator[tuple]:
    with os.scandir(dir_fd) as it:
        names = sorted(entry.name for entry in it)
    for name in names:
        path, sub = folder / name, rel / name
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:  # removed since the folder was listed
            continue
        except OSError as err:  # a folder that may be listed but not searched
            yield path, sub, None, f"a file that could not be read ({err.strerror or err})", None, None
            continue
        target = _readlink(name, dir_fd) if stat.S_ISLNK(st.st_mode) else None
        why = _why(st, path, root, target)
        if why is None and keep is not None and not keep(sub, st):
            continue
        if why is None and stat.S_ISDIR(st.st_mode) and depth >= MAX_DEPTH:
            why = f"a folder nested more than {MAX_DEPTH} deep"
        yield path, sub, st, why, dir_fd, name
        if why is None and stat.S_ISDIR(st.st_mode):
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
            except OSError as err:
                yield path, sub, st, f"a folder that could not be opened ({err.strerror or err})", None, None
                continue
            try:
                if os.path.samestat(st, os.fstat(fd)):
                    yield from _entries(fd, path, sub, root, keep, depth + 1)
                else:
                    yield path, sub, st, "a folder that changed while it was read", None, None
            finally:
                os.close(fd)


def offending(folder: str | os.PathLike) -> list[Refused]:
    """Every entry of ``folder`` (and ``folder`` itself, which must be a folder of its own, not a link) that a
    submission may not hold, with why; [] when it holds plain files and folders only, or does not exist. Nothing
    is followed: a link is reported, never entered."""
    return [Refused(path, why) for path, _, _, why, _, _ in _walk(Path(folder), None) if why]


def _open_plain(name: str | os.PathLike, dir_fd: int | None, path: Path, expected: os.stat_result | None):
    """An open binary file for ``name``, checked on the descriptor; or a :class:`Refused`."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as err:
        refused = refusal(path) if dir_fd is None else None
        return refused or Refused(path, f"a file that could not be opened ({err.strerror or err})")
    st = os.fstat(fd)
    why = _why(st, path)
    if why is None and expected is not None and not os.path.samestat(st, expected):
        why = "a file that changed while it was read"
    if why:
        os.close(fd)
        return Refused(path, why)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_plain(path: str | os.PathLike, field: str) -> bytes:
    """The bytes of the plain file ``path``, opened with ``O_NOFOLLOW`` and checked on the open file; ``InputError``
    naming ``field`` and the file when it is a link, a hard link or a special file (``OSError`` as ``open`` raises
    it otherwise, a missing file among them)."""
    path = Path(path)
    opened = _open_plain(path, None, path, None)
    if isinstance(opened, Refused):
        if not os.path.lexists(path):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        raise InputError(field, f"{field} {str(path)!r} is {opened.why}; {ALLOWED}")
    with opened:
        return opened.read()


def copy_plain(
    folder: str | os.PathLike,
    dest: str | os.PathLike,
    *,
    keep: Callable[[PurePath, os.stat_result], bool] | None = None,
    metadata: bool = False,
    log=None,
) -> list[Refused]:
    """Copy the plain files of ``folder`` into ``dest`` (made if missing; each file new there), keeping their
    relative paths; what was refused instead (links, hard links, special files, a ``folder`` that is itself a
    link), each logged as a warning on ``log`` when given.

    ``keep(relative_path, lstat)`` decides for each plain file and folder (False on a folder skips all it holds);
    ``metadata`` also copies each file's permission bits (``0o777`` at most) and times, as ``shutil.copy2`` does.
    A file is read through its own descriptor, opened with ``O_NOFOLLOW`` from its folder's, never by its path.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    refused = []
    for path, rel, st, why, dir_fd, name in _walk(Path(folder), keep):
        if why is None and not stat.S_ISREG(st.st_mode):
            continue  # a folder: made below when a file in it is copied
        opened = Refused(path, why) if why else _open_plain(name, dir_fd, path, st)
        if isinstance(opened, Refused):
            refused.append(opened)
            if log is not None:
                log.warning("not copied: %s; %s", opened, ALLOWED)
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with opened as src, open(target, "xb") as out:  # "x": never written through a name already there
            while chunk := src.read(1 << 20):
                out.write(chunk)
            if metadata:
                done = os.fstat(src.fileno())
                os.chmod(out.fileno(), stat.S_IMODE(done.st_mode) & 0o777)
        if metadata:
            os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
    return refused
