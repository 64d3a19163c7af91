"""Pydantic models for nested tool-call rows.

NESTFUL published three label styles (v1 ``var1``, v2 code ``$var1``, v2 math ``$var_1``); they are
normalised to one canonical form (``var_1``) so a model writing ``$var1`` and gold ``$var_1`` refer to
the same call, while ``raw_label`` keeps what the file said.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from callbench.tools import ToolSpec

_LABEL = re.compile(r"^\$?var_?(\d+)\$?$")
FINAL_CALL = "var_result"  # v1 pseudo-call that assembles the final answer from earlier outputs


def label_number(digits: str) -> str:
    """The label number written canonically (``01`` -> ``1``). A model may write thousands of digits;
    ``int()`` refuses more than 4300, so a long one only loses its leading zeros."""
    return str(int(digits)) if len(digits) <= 100 else digits.lstrip("0") or "0"


def canonical_label(label: str) -> str:
    """``var1``, ``$var1``, ``$var_1`` -> ``var_1``; any other label just loses its ``$`` sigils."""
    m = _LABEL.match(label.strip())
    if m:
        return f"var_{label_number(m.group(1))}"
    return label.strip().strip("$")


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)
    label: str | None = None
    raw_label: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _canon(self) -> ToolCall:
        if self.label is not None:
            if self.raw_label is None:
                self.raw_label = self.label
            self.label = canonical_label(self.label)
            if not self.label:
                raise ValueError("label is empty")
        return self


class NestedTask(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str = Field(min_length=1)
    input: str = Field(min_length=1)
    output: list[ToolCall] = Field(min_length=1)
    tools: list[ToolSpec] = Field(default_factory=list)
    gold_answer: Any = None
    domain: str = "api"
    source: str = ""
    # Duplicate labels are allowed: the published glaive data reuses one (row 45); a later call
    # with the same label shadows the earlier one, as sequential execution implies.

    @field_validator("domain")
    @classmethod
    def _domain(cls, v: str) -> str:
        if v not in ("math", "code", "api"):
            raise ValueError(f"'{v}' is not a domain (math, code, api)")
        return v

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)
