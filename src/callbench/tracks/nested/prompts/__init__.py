"""Versioned prompt templates for the nested track."""
