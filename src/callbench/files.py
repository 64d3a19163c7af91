"""Reading a user's text file (data, predictions, specs to check, run configs) as UTF-8, with a
one-line error that names the file instead of a traceback; writing a JSON file whole or not at all."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from callbench.errors import CallbenchError, DataError
from callbench.untrusted import DOCUMENT_MAX_DEPTH, UntrustedInputError, check_value


def read_text(
    path: Path, *, error: type[CallbenchError] = DataError, label: str | None = None, decode_fix: str = "", read_fix: str = ""
) -> str:
    """``path``'s text; ``error`` (one line, ``label`` or the path first) when it cannot be read or
    is not UTF-8. ``decode_fix`` / ``read_fix`` end the message with what to do."""
    where = label or str(path)
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        fix = f"; {decode_fix}" if decode_fix else ""
        raise error(f"{where}: not UTF-8 text (byte {exc.start}: {exc.reason}){fix}") from None
    except OSError as exc:
        fix = f"; {read_fix}" if read_fix else ""
        raise error(f"{where}: cannot read ({exc.strerror}){fix}") from None


def loads_document(text: str, where: str, *, at_line: bool = True, text_ok: bool = False) -> Any:
    """A data file's JSON (a whole file, or one JSONL line: ``at_line=False``) within
    :mod:`callbench.untrusted`'s document limits, as :class:`DataError` naming ``where``: a value
    that parsed 900 levels deep would break every recursive walk after it (validation, copies,
    the scorer). The messages keep the decoder's line and reason, which the generic reader drops.
    With ``text_ok`` a text that is not JSON is returned as it is (a field that may hold either)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if text_ok:
            return text
        at = f" at line {exc.lineno}" if at_line else ""
        raise DataError(f"{where}: invalid JSON{at} ({exc.msg})") from None
    except RecursionError:
        raise DataError(f"{where}: nested deeper than {DOCUMENT_MAX_DEPTH} levels") from None
    try:
        return check_value(value, what=where, max_depth=DOCUMENT_MAX_DEPTH)
    except UntrustedInputError as exc:
        raise DataError(str(exc)) from None


def write_json_atomic(path: Path, obj: Any, *, default: Callable[[Any], Any] | None = None) -> None:
    """Write ``obj`` as JSON (indented, a final newline, mode 0644) through a temporary file in the
    same directory, so a reader never sees half a file. An ``OSError`` on failure, the temporary
    file removed; callers word it for their own files (:func:`callbench.runs.store.write_json_atomic`)."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, indent=2, sort_keys=False, default=default)
            fh.write("\n")
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        if tmp is not None and os.path.lexists(tmp):
            os.unlink(tmp)
        raise
