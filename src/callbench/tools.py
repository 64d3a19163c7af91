"""Tools a model calls, as the layers below the tracks see them: :class:`ToolSpec`, one entry of a
task's tool catalog (what the model is shown and a grammar constrains), and :class:`ToolModule`, a
file of tool functions kept as source text (what the sandbox runs). Both are plain data; loading
them from a data set or a directory is the nested track's (:mod:`callbench.tracks.nested.schema`,
:mod:`callbench.tracks.nested.tools`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["ToolModule", "ToolSpec"]


@dataclass(frozen=True)
class ToolModule:
    """A tool file: its path, its source text, and its top-level public function names."""

    path: str
    source: str
    functions: tuple[str, ...]


def _flatten(params: Any) -> tuple[dict[str, Any], list[str]]:
    """Accept ``{name: spec}`` or a JSON-schema object (``{"properties": ..., "required": [...]}``)."""
    if not isinstance(params, dict):
        raise ValueError(f"expected an object, got {type(params).__name__}")
    if isinstance(params.get("properties"), dict) and params.get("type", "object") == "object":
        return dict(params["properties"]), list(params.get("required") or [])
    required = [k for k, v in params.items() if isinstance(v, dict) and v.get("required") is True]
    return dict(params), required


class ToolSpec(BaseModel):
    """One catalog entry. ``parameters`` keeps the published order: ``arg_i`` binds to the i-th one."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)
    required: list[str] = Field(default_factory=list)
    output_parameters: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "parameters" not in data:
            # v1 specs: glaive/executable use query_parameters (+ path_parameters), sgd uses arguments
            merged: dict[str, Any] = {}
            for key in ("path_parameters", "query_parameters", "arguments"):
                if isinstance(data.get(key), dict):
                    merged.update(data[key])
            data["parameters"] = merged
        if "output_parameters" not in data and "output_parameter" in data:  # older v2 spelling
            data["output_parameters"] = data["output_parameter"]
        params, required = _flatten(data.get("parameters") or {})
        data["parameters"] = params
        data.setdefault("required", required)
        if data.get("output_parameters") is not None:
            data["output_parameters"], _ = _flatten(data["output_parameters"])
        else:
            data["output_parameters"] = {}
        return data

    @property
    def parameter_names(self) -> list[str]:
        return list(self.parameters)
