"""Web API invocation track (WAPIIBench setup): complete Axios code, run it, score the request."""
