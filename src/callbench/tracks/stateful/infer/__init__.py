"""State-model inference from an OpenAPI spec (issue 16, part 1): resources, roles, id sources,
preconditions and effects, written as an editable YAML model (see ``docs/one-spec.md``)."""

from callbench.tracks.stateful.infer.apply import load_model
from callbench.tracks.stateful.infer.infer import infer_model
from callbench.tracks.stateful.infer.overlay import StateModel, read_model, to_yaml, write_model
from callbench.tracks.stateful.infer.report import report

__all__ = ["StateModel", "infer_model", "load_model", "read_model", "report", "to_yaml", "write_model"]
