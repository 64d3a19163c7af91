"""The package version, in a module of its own: the run store and run identity record it, and
importing it must not pull in the package's lazy public API (``callbench/__init__``)."""

# Part of every run's scoring identity: a version that changes how answers are scored makes an
# older run refuse to resume until ``--rescore`` re-scores its stored answers. 0.2.0: compat is
# each paper's published scorer sample by sample (issue 26), the trailing slash is matched exactly.
__version__ = "0.2.0"
