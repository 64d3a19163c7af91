"""Model backends behind one async protocol (see :mod:`callbench.models.base`)."""

from callbench.models.base import GenerationConfig, ModelBackend, ModelInput, ModelOutput
from callbench.models.registry import available_models, load_model, register_model

__all__ = [
    "GenerationConfig",
    "ModelBackend",
    "ModelInput",
    "ModelOutput",
    "available_models",
    "load_model",
    "register_model",
]
