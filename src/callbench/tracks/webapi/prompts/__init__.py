"""Versioned prompt templates; a run records the version and a hash of the files it used."""
