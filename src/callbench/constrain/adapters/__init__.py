"""Backend adapters: translate a backend's logits-processor calling convention into a
:class:`~callbench.constrain.engine.ConstraintSession` and apply its mask, once per tensor kind.

``numpy_adapter`` serves llama-cpp-python (numpy logits, one sequence); ``torch_adapter`` serves
transformers (torch logits, a batch). They are imported lazily by the engine so that neither numpy
users need torch nor the other way round.
"""
