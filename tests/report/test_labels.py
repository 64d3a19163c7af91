from callbench.report.build import short_labels
from callbench.report.table import constraint_line, relative_gain


def test_labels_name_only_what_differs():
    a = {"model": "llamacpp:x.gguf", "setup": "full", "constrained": False, "run_id": "a"}
    b = {**a, "constrained": True, "run_id": "b"}
    c = {**a, "setup": "args", "run_id": "c"}
    assert short_labels([a, b]) == ["UD", "CD"]
    assert short_labels([a, c]) == ["full", "args"]
    assert short_labels([a, dict(a, run_id="z")]) == ["a", "z"]
    assert short_labels([b]) == ["llamacpp:x.gguf full CD"]


def test_relative_gain_and_constraint_line():
    assert relative_gain(0.2, 0.38) == "+90%"
    assert relative_gain(0.0, 0.1) == "+∞" and relative_gain(None, 0.1) == "–"
    assert constraint_line({}) is None
    line = constraint_line({"constrained_decoding": {"samples": 2, "steps": 10, "changed_top": 3,
                                                     "changed_top_per_sample_mean": 1.5, "mask_ms_median_of_samples": 0.05,
                                                     "mask_ms_p99_max": 1.2, "unsatisfiable": 1}})
    assert "changed the model's top choice 3 times" in line and "unsatisfiable: 1" in line
