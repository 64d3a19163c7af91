"""Benchmark tracks. Each track supplies samples, prompts, parsing, scoring and aggregation;
the runner (:mod:`callbench.runs`) owns concurrency, storage and resume for all of them."""

from callbench.tracks.base import Sample, SampleResult, Track, available_tracks, get_track

__all__ = ["Sample", "SampleResult", "Track", "get_track", "available_tracks"]
