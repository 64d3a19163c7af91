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
    """An optional dependency is not installed."""

    def __init__(self, package: str, extra: str):
        super().__init__(f"this needs the '{package}' package: pip install 'callbench[{extra}]'")
        self.package = package
        self.extra = extra
