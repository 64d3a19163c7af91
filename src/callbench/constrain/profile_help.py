"""The constrained-decoding grammar profiles' help texts, said once: the ``run webapi`` flags
(:mod:`callbench.tracks.webapi.definition`) and ``callbench constrain webapi``
(:mod:`callbench.cli.options`) print the same words. Light to import (no grammar code): the CLI's
``--help`` reads it."""

from __future__ import annotations

CD_PROFILE_HELP = (
    "Limits of the grammar: callbench (default: schemas nest as deep as they allow, free-form values 6 levels, arrays unbounded) or "
    "paper (WAPIIBench's CD: objects/arrays nested at most 3 levels inside an argument, at most 5 array "
    "items, credentials as keys with any string value, required only where one security scheme is named, "
    "and --value-types paper unless given)."
)
VALUE_TYPES_HELP = (
    "Typing of request-body values: lenient (default; '3'/'true' also accepted for integer/number/boolean "
    "fields) or paper (only literals 3/true in the body, as the paper's CD; query and header values stay "
    "strings). Default: the --cd-profile's."
)

__all__ = ["CD_PROFILE_HELP", "VALUE_TYPES_HELP"]
