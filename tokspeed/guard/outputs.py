"""The one way tokspeed writes a file, and the check of an output target before any work starts.

``write_file(path, data)``: resolve the target's folder; refuse when the target itself is a symlink (a link
planted where an output goes would redirect the write) or anything but a regular file; create a temp file
in the same folder under a random name with ``O_CREAT|O_EXCL|O_NOFOLLOW`` (a planted ``*.tmp`` link, or a
name raced into place, makes the open fail instead of writing through it); write, fsync, and rename it
into place (a reader never sees half a file; a crash leaves the old file). ``open_append`` is the same for
a log written line by line (``requests.jsonl``).

Every text written here passes ``guard.redact.known().text`` first: redaction happens once, at the writer.

``RunDir(path)``: a folder held open by a descriptor (``os.open(dir, O_DIRECTORY)``) for a run that writes
several files in it over minutes (bench-server): every file is created, appended and renamed through the
descriptor (``dir_fd=``), so swapping the folder, or a parent of it, for a symlink mid-run cannot redirect
a write.

``check_output(path)`` / ``check_output_dir(path)``: before minutes of work, the target is a regular file
or nothing yet (not a folder, FIFO, device or link), and its folder (or the nearest existing parent, when
it will be created) is a folder this process can write. Every failure is one ``UserError`` line.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from ..errors import UserError
from .redact import known

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_APPEND = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _short(path) -> str:
    text = str(path)
    return text if len(text) <= 120 else text[:120] + "…"


def _lstat(p: Path):
    if "\x00" in str(p):
        raise UserError(f"{_short(repr(str(p)))}: a file name cannot hold a NUL character")
    try:
        return os.lstat(p)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise UserError(f"cannot write {_short(p)}: a part of its folder is a file, not a folder") from None
    except OSError as e:        # a name too long, a link loop in the folders, no permission
        raise UserError(f"cannot look at {_short(p)}: {e.strerror}") from None


def _existing_parent(p: Path) -> Path:
    """The nearest folder above ``p`` that exists (a parent that is a file is an error)."""
    for parent in p.parents:
        st = _lstat(parent)
        if st is None:
            continue
        if stat.S_ISLNK(st.st_mode):
            try:
                st = os.stat(parent)                   # a linked folder the user named is theirs to use
            except OSError:
                raise UserError(f"cannot write {_short(p)}: {_short(parent)} is a broken link") from None
        if not stat.S_ISDIR(st.st_mode):
            raise UserError(f"cannot write {_short(p)}: {_short(parent)} is a file, not a folder")
        return parent
    return Path(".")


def _writable_folder(p: Path, folder: Path, what: str) -> None:
    """Probe by creating (and removing) a file: permission bits do not tell root about /proc or a
    read-only mount."""
    probe = folder / f".tokspeed-probe-{secrets.token_hex(6)}"
    try:
        os.close(os.open(probe, _CREATE, 0o600))
        os.unlink(probe)
    except OSError as e:
        raise UserError(f"cannot write {what} {_short(p)}: folder {_short(folder)} is not writable "
                        f"({e.strerror})", "choose a place you can write to") from None


def check_output(path, what: str = "output") -> Path:
    """The output file ``path`` can be written: checked before the work that produces it."""
    p = Path(path).expanduser()
    if str(path) == "" or p.name in ("", ".", ".."):
        raise UserError(f"{what}: {str(path)!r} is not a file name", "give a file name")
    st = _lstat(p)
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise UserError(f"{what} {_short(p)} is a symbolic link; refused (a link would redirect the write)",
                            "give the real path, or remove the link")
        if stat.S_ISDIR(st.st_mode):
            raise UserError(f"{what} {_short(p)} is a folder", "give a file name")
        if not stat.S_ISREG(st.st_mode):
            raise UserError(f"{what} {_short(p)} is not a regular file (a FIFO, device or socket)",
                            "give the path of a regular file")
    _writable_folder(p, _existing_parent(p), what)
    return p


def check_output_dir(path, what: str = "output folder") -> Path:
    """The output folder ``path`` exists as a folder or can be made, and can be written."""
    p = Path(path).expanduser()
    if str(path) == "":
        raise UserError(f"{what}: an empty name", "give a folder")
    st = _lstat(p)
    if st is not None:
        try:
            st = os.stat(p)
        except OSError:
            raise UserError(f"{what} {_short(p)} is a broken link") from None
        if not stat.S_ISDIR(st.st_mode):
            raise UserError(f"{what} {_short(p)} exists and is not a folder", "give a new folder for the output")
        _writable_folder(p, p, what)
    else:
        _writable_folder(p, _existing_parent(p), what)
    return p


def check_outputs(folder, names, what: str = "output folder") -> Path:
    """An output folder and the files tokspeed will write in it (``names``), checked before the work."""
    p = check_output_dir(folder, what)
    if _lstat(p) is not None:
        for name in names:
            check_output(p / name, name)
    return p


def make_dir(path, what: str = "output folder") -> Path:
    p = check_output_dir(path, what)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot make {what} {_short(p)}: {e.strerror}") from None
    return p


def write_file(path, data: str | bytes, what: str = "output", make_parents: bool = True) -> Path:
    """Write ``data`` to ``path`` through an exclusive temp file in the same folder and a rename."""
    p = check_output(path, what)
    if make_parents:
        make_dir(p.parent, "folder")
    raw = known().text(data).encode("utf-8") if isinstance(data, str) else bytes(data)   # redaction at the writer
    tmp = p.parent / f".{p.name[:200]}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(tmp, _CREATE, 0o644)
    except OSError as e:
        raise UserError(f"cannot write {what} {_short(p)}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        check_output(p, what)                          # nothing was planted meanwhile
        os.replace(tmp, p)                             # replaces a link itself, never its target
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise UserError(f"cannot write {what} {_short(p)}: {e.strerror}") from None
        raise
    return p


def open_append(path, what: str = "output"):
    """A text file opened for appending, never through a link, refused unless it is a regular file."""
    p = check_output(path, what)
    try:
        fd = os.open(p, _APPEND, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UserError(f"{what} {_short(p)} is a symbolic link; refused") from None
        raise UserError(f"cannot write {what} {_short(p)}: {e.strerror}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:   # a hard link planted there would append to its twin
        os.close(fd)
        raise UserError(f"{what} {_short(p)} is not a regular file of its own (a device, or a hard link)")
    return RedactingFile(os.fdopen(fd, "a", encoding="utf-8"))


class RedactingFile:
    """A text file whose every write passes the process's redactor (``guard.redact.known``)."""

    def __init__(self, f):
        self._f = f

    def write(self, text: str) -> int:
        return self._f.write(known().text(text))

    def flush(self) -> None:
        self._f.flush()

    def fileno(self) -> int:
        return self._f.fileno()

    def close(self) -> None:
        self._f.close()


class RunDir:
    """A run's folder, made if needed and opened once; files in it are written through its descriptor."""

    def __init__(self, path, what: str = "run directory"):
        self.path = make_dir(path, what)
        try:
            self.fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError as e:
            raise UserError(f"cannot open {what} {_short(self.path)}: {e.strerror}") from None

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    def _lstat(self, name: str):
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def _check(self, name: str, what: str) -> None:
        st = self._lstat(name)
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise UserError(f"{what} {_short(self.path / name)} is a symbolic link; refused (a link would redirect "
                            "the write)", "give the real path, or remove the link")
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise UserError(f"{what} {_short(self.path / name)} is not a regular file (a folder, FIFO or device); "
                            "refused")

    def size(self, name: str) -> int:
        st = self._lstat(name)
        return st.st_size if st is not None and stat.S_ISREG(st.st_mode) else 0

    def open_append(self, name: str, what: str = "output"):
        self._check(name, what)
        try:
            fd = os.open(name, _APPEND, 0o644, dir_fd=self.fd)
        except OSError as e:
            raise UserError(f"cannot write {what} {_short(self.path / name)}: {e.strerror}") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            os.close(fd)
            raise UserError(f"{what} {_short(self.path / name)} is not a regular file of its own (a device, or a hard link)")
        return RedactingFile(os.fdopen(fd, "a", encoding="utf-8"))

    def write(self, name: str, data: str | bytes, what: str = "output") -> Path:
        """``name`` in this folder written whole: an exclusive temp file and a rename, both through the descriptor."""
        self._check(name, what)
        raw = known().text(data).encode("utf-8") if isinstance(data, str) else bytes(data)
        tmp = f".{name[:200]}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, _CREATE, 0o644, dir_fd=self.fd)
            with os.fdopen(fd, "wb") as f:
                f.write(raw)
                f.flush()
                os.fsync(f.fileno())
            self._check(name, what)
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except OSError as e:
            try:
                os.unlink(tmp, dir_fd=self.fd)
            except OSError:
                pass
            raise UserError(f"cannot write {what} {_short(self.path / name)}: {e.strerror}") from None
        return self.path / name

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def write_in(directory, name: str, data: str | bytes, what: str | None = None) -> Path:
    """``name`` written in ``directory``: through its descriptor when it is a ``RunDir``, else ``write_file``."""
    if isinstance(directory, RunDir):
        return directory.write(name, data, what or name)
    return write_file(Path(directory) / name, data, what or name)
