from callbench.report.build import short_labels
from callbench.report.compare import check_labels, sample_warning, setup_warnings, short_model_name
from callbench.report.table import constraint_line, relative_gain


def test_short_model_names_drop_the_backend_and_the_server():
    assert short_model_name("openai:Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8765/v1") == "Qwen2.5-7B-Instruct"
    assert short_model_name("openai:m@http://h:8766/v1[heal]") == "m"
    assert short_model_name("llamacpp:/models/x.gguf") == "x"
    assert short_model_name("hf:gpt2") == "gpt2"
    assert short_model_name("gold") == "gold" and short_model_name("replay:preds.jsonl") == "replay:preds.jsonl"


def test_labels_name_the_model_and_what_else_differs():
    a = {"model": "llamacpp:x.gguf", "setup": "full", "constrained": False, "run_id": "a"}
    b = {**a, "constrained": True, "run_id": "b"}
    c = {**a, "setup": "args", "run_id": "c"}
    assert short_labels([a, b]) == ["x UD", "x CD"]
    assert short_labels([a, c]) == ["x full", "x args"]
    assert short_labels([a, dict(a, run_id="z")]) == ["x (a)", "x (z)"]
    assert short_labels([a, a]) == ["x #1", "x #2"]  # the same run twice
    assert short_labels([b]) == ["x full CD"]


def test_two_models_on_one_server_keep_their_names():
    """Labels were URL tails ('8765/v1'), so two models on one server looked the same."""
    one = {"model": "openai:llama-3-8b@http://127.0.0.1:8765/v1", "setup": "full", "run_id": "r1"}
    two = {"model": "openai:qwen-7b@http://127.0.0.1:8765/v1", "setup": "full", "run_id": "r2"}
    assert short_labels([one, two]) == ["llama-3-8b", "qwen-7b"]
    there = {**one, "model": "openai:llama-3-8b@http://127.0.0.1:8766/v1", "run_id": "r3"}
    assert short_labels([one, there]) == ["llama-3-8b@127.0.0.1:8765", "llama-3-8b@127.0.0.1:8766"]


def test_given_labels_are_checked():
    assert check_labels(None, 2) is None
    assert check_labels(["a", "b"], 2) == ["a", "b"]
    for bad in (["a"], ["a", "a"], ["a", " "]):
        try:
            check_labels(bad, 2)
        except Exception as exc:  # noqa: BLE001
            assert "--label" in str(exc)
        else:
            raise AssertionError(bad)


def test_setup_warnings_name_each_kind_of_difference():
    a = {"track": "webapi", "model": "m1", "setup": "full", "prompt_version": "v1", "generation": {"temperature": 0.0},
         "scoring": {"data_sha256": "aaa", "callbench_version": "0.1"}}
    b = {**a, "model": "m2", "setup": "args", "prompt_version": "v2", "generation": {"temperature": 0.7},
         "scoring": {"data_sha256": "bbb", "callbench_version": "0.1"}}
    lines = setup_warnings([a, b], ["A", "B"])
    text = "\n".join(lines)
    assert len(lines) == 4, lines
    assert "runs differ in setup: setup full (A) vs args (B)" in text
    assert "runs differ in prompt version: prompt_version v1 (A) vs v2 (B)" in text
    assert "data (sample set): data_sha256 aaa (A) vs bbb (B)" in text
    assert "generation settings: generation.temperature 0.0 (A) vs 0.7 (B)" in text
    # the model is what is compared; a key only one run recorded (an older identity) is no difference
    old = {"track": "webapi", "model": "m3", "setup": "full", "prompt_version": "v1", "data_sha256": "aaa"}
    assert setup_warnings([a, old], ["A", "old"]) == []
    # an option recorded only when set (--context): a run without it used the default
    rag = {**a, "context": "rag", "context_k": 5}
    assert setup_warnings([a, rag], ["A", "rag"]) == ["runs differ in setup: context none (A) vs rag (rag)"]
    assert sample_warning(4, [76, 0], ["A", "B"]) == (
        "runs differ in sample set: 4 shared, 76 only in A; the comparison uses the 4 shared samples only"
    )
    assert sample_warning(4, [0, 0], ["A", "B"]) is None


def test_relative_gain_and_constraint_line():
    assert relative_gain(0.2, 0.38) == "+90%"
    assert relative_gain(0.0, 0.1) == "+∞" and relative_gain(None, 0.1) == "–"
    assert constraint_line({}) is None
    line = constraint_line({"constrained_decoding": {"samples": 2, "steps": 10, "changed_top": 3,
                                                     "changed_top_per_sample_mean": 1.5, "mask_ms_median_of_samples": 0.05,
                                                     "mask_ms_p99_max": 1.2, "unsatisfiable": 1}})
    assert "changed the model's top choice 3 times" in line and "unsatisfiable: 1" in line
