"""Services a sample's program talks to, below the mock and the tracks: the JSON-over-HTTP server
base (:mod:`~callbench.services.json_http`) and the memory-limited process each service instance
runs in (:mod:`~callbench.services.isolation`)."""
