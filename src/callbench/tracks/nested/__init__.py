"""NESTFUL-style nested tool-call track: sequences of calls whose arguments reference earlier outputs."""
