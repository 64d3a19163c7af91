"""One exception family, so the CLI can turn any bad input into a one-line message."""

from __future__ import annotations


class CallbenchError(Exception):
    """A user-facing error: its message is one line naming the file and field at fault."""


class DataError(CallbenchError):
    """A dataset file or row is missing or malformed."""


class SpecError(CallbenchError):
    """An OpenAPI spec cannot be loaded or is malformed."""


class ConfigError(CallbenchError):
    """A command-line option, model spec or config value is invalid."""


class RunStoreError(CallbenchError):
    """A run directory's files (``run.sqlite``, ``config.json``, ``summary.json``) are missing,
    unreadable or malformed; the message names the file and how to get going again."""


class MissingExtraError(CallbenchError):
    """An optional dependency is not installed.

    The message names the package and the exact install command, ``pip install 'callbench[EXTRA]'``
    (quoted for the shell). ``what`` names what needs it (default "this"); ``alternative`` is a way
    to go on without it, appended as "; or ...". The brackets are part of the command: a CLI that
    prints the message through rich must escape it (``rich.markup.escape``), or ``[hf]`` is read as
    a style tag and vanishes.
    """

    def __init__(self, package: str, extra: str, *, what: str | None = None, alternative: str | None = None):
        message = f"{what or 'this'} needs the '{package}' package: pip install 'callbench[{extra}]'"
        if alternative:
            message += f"; or {alternative}"
        super().__init__(message)
        self.package = package
        self.extra = extra
        self.what = what
        self.alternative = alternative

    @property
    def install(self) -> str:
        """The install command alone: ``pip install 'callbench[EXTRA]'``."""
        return f"pip install 'callbench[{self.extra}]'"

    def __reduce__(self):  # pickles across process pools (the default would call cls(message))
        return (_missing_extra, (type(self), self.package, self.extra, self.what, self.alternative))


def _missing_extra(cls: type, package: str, extra: str, what: str | None, alternative: str | None) -> MissingExtraError:
    return cls(package, extra, what=what, alternative=alternative)
