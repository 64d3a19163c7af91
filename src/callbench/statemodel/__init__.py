"""State-model inference from an OpenAPI spec (issue 16, part 1): resources, roles, id sources,
preconditions and effects, written as an editable YAML model (see ``docs/one-spec.md``)."""

from callbench.statemodel.apply import load_model
from callbench.statemodel.infer import infer_model
from callbench.statemodel.overlay import StateModel, read_model, to_yaml, write_model
from callbench.statemodel.report import report

__all__ = ["StateModel", "infer_model", "load_model", "read_model", "report", "to_yaml", "write_model"]
