"""The package version, in a module of its own: the run store and run identity record it, and
importing it must not pull in the package's lazy public API (``callbench/__init__``)."""

__version__ = "0.1.0"
