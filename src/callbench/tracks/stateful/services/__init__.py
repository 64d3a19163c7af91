"""Simulated stateful services that stateful-track programs and agents call."""
