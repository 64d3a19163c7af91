"""Sweeps: a grid of models x tracks x settings, each cell an ordinary run directory under one
sweep directory with a manifest (:mod:`~callbench.sweep.grid`, :mod:`~callbench.sweep.manifest`),
run by the local executor (:mod:`~callbench.sweep.local`)."""
