"""Text files: atomic writes (a reader sees the old file or the new one, never half of either), reads
that name the file and line when the bytes are not UTF-8 text, and the course's JSON data files
(scenarios, attacks) found in files and folders, with errors that name the file."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, then replace `path` with it."""
    path = Path(path)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)  # same folder, same file system: the swap is atomic
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


class NotUTF8Error(ValueError):
    """A file that should be UTF-8 text and is not; names the file and the line of the first bad byte."""

    def __init__(self, path: Path, line: int, byte: int) -> None:
        self.path, self.line = path, line
        super().__init__(f"{path}, line {line}: not UTF-8 text (byte 0x{byte:02x}); "
                         "was it saved in another encoding?")


def read_utf8(path: str | Path) -> str:
    """The text of `path`; a NotUTF8Error rather than a UnicodeDecodeError that names no file."""
    path = Path(path)
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NotUTF8Error(path, data.count(b"\n", 0, error.start) + 1, data[error.start]) from None


def utf8_encodable(text: str) -> bool:
    """Can `text` be written to a UTF-8 file? Not if it holds a lone surrogate such as '\\ud800'."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def json_files(paths: str | Path | Iterable[str | Path], what: str, error: type[Exception]) -> list[Path]:
    """The files given, and every *.json in the folders given (by name); `error` names a path
    that holds no `what` files or does not exist."""
    found: list[Path] = []
    for path in map(Path, [paths] if isinstance(paths, (str, Path)) else paths):
        if path.is_dir():
            inside = sorted(path.glob("*.json"))
            if not inside:
                raise error(f"{path}: no {what} files (*.json) in this folder")
            found += inside
        elif path.is_file():
            found.append(path)
        else:
            raise error(f"{path}: no such file or folder")
    return found


def read_json(path: Path, what: str, error: type[Exception]):
    """The JSON value in `path`; `error` naming the file when it cannot be read as a JSON `what`."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as cause:
        raise error(f"{path}: cannot read a JSON {what}: {cause}") from None
