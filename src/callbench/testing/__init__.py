"""Test support shipped with callbench, for its own tests and benchmarks and for anyone testing a
backend or a track against it: a tiny random GPT-2/T5 (:mod:`~callbench.testing.tiny_models`), a
scripted model backend (:mod:`~callbench.testing.scripted`), a fault-injecting OpenAI-compatible
server (:mod:`~callbench.testing.fake_openai`) and the constrained-decoding engine's test
languages and vocabularies (:mod:`~callbench.testing.constrain`). Shipped code never imports this
package (``tests/test_import_graph.py`` holds it to the top of the layer order)."""
