"""Reading a user's text file (data, predictions, specs to check, run configs) as UTF-8, with a
one-line error that names the file instead of a traceback."""

from __future__ import annotations

from pathlib import Path

from callbench.errors import CallbenchError, DataError


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
