"""Where datasets live and how they get there (``callbench data fetch``)."""

from callbench.data.paths import data_dir

__all__ = ["data_dir"]
