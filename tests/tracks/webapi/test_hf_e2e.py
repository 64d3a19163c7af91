"""``hf:PATH`` through a whole webapi run on a tiny random GPT-2 (pipeline integration, not quality)."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from callbench.api import run  # noqa: E402
from callbench.models.base import GenerationConfig  # noqa: E402
from callbench.testing.tiny_models import build_tiny_gpt2  # noqa: E402


def test_hf_backend_runs_webapi_track(tmp_path, data_root):
    model_dir = build_tiny_gpt2(tmp_path / "tiny")
    out = run("webapi", f"hf:{model_dir}", out_dir=tmp_path / "runs", limit=3,
              generation=GenerationConfig(max_tokens=8, stop=("\n```",)))
    s = out.summary
    assert s["n"] == 3 and s["complete"]
    # random weights: nothing is correct, but every sample was generated, executed and classified
    m = s["metrics"]
    assert m["correct_implementations_t"] == 0.0
    assert m["total_errors"] + round(m["executable_implementations_t"] * 3) == 3
