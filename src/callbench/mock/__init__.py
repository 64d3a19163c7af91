"""A stateful mock API built from an OpenAPI spec and its state model (issue 16, part 2).

``MockService(spec, model, seed=0).start()`` serves the spec on loopback: requests are validated
against the spec, create operations store objects in SQLite, reads and lists return them, deletes
remove them, and every response conforms to its schema. See ``docs/one-spec.md``.
"""

from callbench.mock.server import MockService

__all__ = ["MockService"]
