"""Backend adapters: translate a backend's logits-processor calling convention into a
:class:`~callbench.constrain.engine.ConstraintSession` and apply its mask, once per tensor kind.

``numpy_adapter`` serves llama-cpp-python (numpy logits, one sequence); ``torch_adapter`` serves
transformers (torch logits, a batch). Each registers its processor with the engine
(:func:`~callbench.constrain.engine.register_adapter`) when imported, and a backend imports the
one for its tensor kind: the engine never imports an adapter, so numpy users need no torch and the
dependency runs one way, adapters on the engine.
"""
