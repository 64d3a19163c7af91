"""StateGen end to end: generation, oracles, resume, the two-agent writer, the CLI, coverage."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from random import Random

import pytest
from typer.testing import CliRunner

from callbench.cli import app
from callbench.testing.scripted import ScriptedModel as Scripted
from callbench.tracks.stateful.coverage import run_coverage
from callbench.tracks.stateful.generator import GenerateOptions, generate, read_tasks
from callbench.tracks.stateful.program import Branch, render
from callbench.tracks.stateful.sampling import sample_program
from callbench.tracks.stateful.scenarios import get_scenario
from callbench.tracks.stateful.writer import agents_text, mechanical_problems, template_text

pytest.importorskip("requests")
runner = CliRunner()


def test_generate_keeps_tasks_with_oracles_and_resumes(tmp_path: Path):
    scen = get_scenario("voice")
    out = tmp_path / "voice"
    m = generate(scen, out, GenerateOptions(n=2, seed=3))
    assert m["n_kept"] == 2
    first = (out / "tasks.jsonl").read_text()
    m = generate(scen, out, GenerateOptions(n=4, seed=3))  # resume: the first two are kept as they are
    assert m["n_kept"] == 4 and (out / "tasks.jsonl").read_text().startswith(first)
    tasks = read_tasks(out / "tasks.jsonl")
    assert [t["id"] for t in tasks] == ["voice_001", "voice_002", "voice_003", "voice_004"]
    for t in tasks:
        names = [c["name"] for c in t["cases"]]
        assert len(names) >= 2 and names[0] == "base" and any(n.startswith("resampled") for n in names)
        assert ("else" in names) == ("\nelse:" in t["reference"])
        assert all(c["expected"]["status"] == "ok" for c in t["cases"])
        assert mechanical_problems(t["text"], _prog(t), scen) == []
        assert set(t["complexity"]) >= {"n_calls", "path_depth", "binding_count", "code_lines", "instruction_words"}
    # a fresh run with the same seed writes the same tasks
    again = tmp_path / "again"
    generate(scen, again, GenerateOptions(n=4, seed=3))
    assert (again / "tasks.jsonl").read_text() == (out / "tasks.jsonl").read_text()


def _prog(task):
    class P:  # what mechanical_problems reads
        inputs = {k: None for k in task["inputs"]}
        result_var = task["result_var"]

    return P()


def test_else_case_takes_the_other_branch():
    scen = get_scenario("session")
    from callbench.tracks.stateful.oracles import record

    for seed in range(40):
        prog = sample_program(scen, Random(seed), n_calls=4)
        if any(isinstance(s, Branch) for s in prog.steps):
            break
    else:
        pytest.fail("no branch sampled in 40 seeds")
    code = render(prog, scen)
    rec = record(scen, prog, code, Random(0))
    assert rec.dropped is None or "resampled" in rec.dropped
    outcomes = {c.name: o for c, o in rec.cases}
    assert "else" in outcomes
    base, other = outcomes["base"], outcomes["else"]
    assert (base.result, base.state, base.writes) != (other.result, other.state, other.writes)


def _voice_program():
    scen = get_scenario("voice")
    prog = sample_program(scen, Random(1), n_calls=3)
    return scen, prog, render(prog, scen)


def test_two_agents_revise_until_approved_and_keep_transcripts():
    scen, prog, code = _voice_program()
    names = " ".join(f"`{v}`" for v in prog.inputs)
    good = f"Use {names} to do the thing and store the final record in `result`."
    writer = Scripted(["Call api.search_voices please", good, good])
    evaluator = Scripted(
        [
            '{"fidelity": 3, "ambiguity": 4, "naturalness": 4, "redundancy": 5, "approve": false, "feedback": "say which voice"}',
            'Sure: {"fidelity": 5, "ambiguity": 4, "naturalness": 4, "redundancy": 5, "approve": true, "feedback": ""}',
        ]
    )
    res = asyncio.run(agents_text(prog, code, scen, writer, evaluator, rounds=3))
    assert res.source == "agents" and res.text == good and res.rounds == 3
    assert res.scores == {"fidelity": 5, "ambiguity": 4, "naturalness": 4, "redundancy": 5}
    feedback = [m["content"] for m in res.writer_transcript if m["role"] == "user"][1:]
    assert "contains code" in feedback[0] and "say which voice" in feedback[1]
    assert len(res.evaluator_transcript) == 4  # two reviews: question + answer each
    assert code in evaluator.seen[0].messages[-1]["content"]


def test_agents_never_approving_fall_back_to_the_template():
    scen, prog, code = _voice_program()
    names = " ".join(f"`{v}`" for v in prog.inputs)
    text = f"Do it with {names}; `result` is the last record."
    writer = Scripted([text, text])
    evaluator = Scripted(["no json here", '{"fidelity": 2, "approve": false, "feedback": "vague"}'])
    res = asyncio.run(agents_text(prog, code, scen, writer, evaluator, rounds=2))
    assert res.source == "template (agents not approved)" and res.text == template_text(prog, scen)
    assert len(res.writer_transcript) == 2 + 2 * 2


def test_cli_generate_then_run_gold(tmp_path: Path):
    bench = tmp_path / "bench"
    r = runner.invoke(app, ["generate", "stateful", "--scenario", "session", "--n", "2", "--out", str(bench / "session")])
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        app, ["run", "stateful", "--bench", str(bench), "--model", "gold", "--out", str(tmp_path / "runs"), "--no-progress"]
    )
    assert r.exit_code == 0, r.output
    summary = json.loads(next((tmp_path / "runs").rglob("summary.json")).read_text())
    assert summary["metrics"]["pass@1"] == 1.0 and summary["by_scenario"]["session"]["n_tasks"] == 2


def test_cli_errors_are_one_line(tmp_path: Path):
    r = runner.invoke(app, ["generate", "stateful", "--scenario", "nope", "--out", str(tmp_path)])
    assert r.exit_code != 0 and "unknown scenario 'nope'" in r.output
    r = runner.invoke(app, ["run", "stateful", "--bench", str(tmp_path / "missing"), "--model", "gold"])
    assert r.exit_code != 0 and "no such benchmark" in r.output
    r = runner.invoke(app, ["run", "stateful", "--model", "gold", "--samples", "2", "--k", "3"])
    assert r.exit_code != 0 and "--k 3" in r.output


def test_energy_beats_random_on_coverage_and_cli_writes_json(tmp_path: Path):
    res = run_coverage(get_scenario("tensor"), programs=40, seeds=3)
    e, r = res["samplers"]["energy"], res["samplers"]["random"]
    assert e["mean_programs_to_goal"] < r["mean_programs_to_goal"]
    assert all(a >= b for a, b in zip(e["mean_curve"][5:], r["mean_curve"][5:], strict=True))
    out = tmp_path / "cov.json"
    r = runner.invoke(app, ["coverage", "--scenario", "session", "--programs", "1..20", "--seeds", "2", "--json", str(out), "--out", str(tmp_path / "cov0")])
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())["scenarios"]["session"]
    assert len(data["samplers"]["energy"]["curves"]) == 2 and len(data["samplers"]["random"]["mean_curve"]) == 20
    # defaults: JSON and (with matplotlib) a plot under --out
    r = runner.invoke(app, ["coverage", "--scenario", "voice", "--programs", "10", "--seeds", "1", "--out", str(tmp_path / "cov")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "cov" / "coverage-voice.json").is_file()
    pytest.importorskip("matplotlib")
    assert (tmp_path / "cov" / "coverage-voice.png").stat().st_size > 1000


def test_resume_with_other_settings_is_refused(tmp_path: Path):
    from callbench.errors import ConfigError

    scen = get_scenario("voice")
    out = tmp_path / "v"
    generate(scen, out, GenerateOptions(n=1, seed=2))
    with pytest.raises(ConfigError, match="not generated with --seed 3"):
        generate(scen, out, GenerateOptions(n=2, seed=3))
    with pytest.raises(ConfigError, match="sampler was 'energy', now 'random'"):
        generate(scen, out, GenerateOptions(n=2, seed=2, sampler="random"))
    # a lost manifest does not restart the attempts: no task is generated twice
    (out / "manifest.json").unlink()
    generate(scen, out, GenerateOptions(n=3, seed=2))
    refs = [t["reference"] for t in read_tasks(out / "tasks.jsonl")]
    seeds = [t["seed"] for t in read_tasks(out / "tasks.jsonl")]
    assert len(set(seeds)) == 3 and len(refs) == 3


def _readability_problems(text: str, reference: str) -> list[str]:
    """What a developer reading the task would object to (issue 12, part 7)."""
    import re

    problems = []
    if "call the result" in text:
        problems.append("dictates variable names at every step ('call the result')")
    if re.search(r"\bNone\b|\bnull\b", text):
        problems.append("a None placeholder in prose")
    for name in re.findall(r"keep the result as `(\w+)`", text):
        after = text.split(f"keep the result as `{name}`", 1)[1]
        if not re.search(rf"`{name}(\[\d+\])?`", after):
            problems.append(f"names `{name}` but never uses it")
    lines = [ln.strip() for ln in reference.splitlines()]
    for i, line in enumerate(lines):  # a call whose result nothing uses (and that changes nothing)
        m = re.match(r"(\w+) = (?:api\.(?:search_voices|list_audio)|requests\.get)\(", line)
        if m and not any(re.search(rf"\b{m.group(1)}\b", later) for later in lines[i + 1 :]):
            problems.append(f"dead read: {line[:60]}")
    if "status_code" in reference.splitlines()[-1] or re.search(r"result = (\w+)\n?$", reference):
        last_var = re.search(r"(\w+) = requests\.delete\(.*\.status_code$", reference, re.M)
        if last_var and re.search(rf"^\s*result = {last_var.group(1)}$", reference, re.M) and "status code" not in text:
            problems.append("the result is a status code but the text does not say so")
    return problems


@pytest.mark.parametrize("name", ["session", "voice"])
def test_template_text_reads_like_a_task(tmp_path: Path, name: str):
    scen = get_scenario(name)
    generate(scen, tmp_path / name, GenerateOptions(n=8, seed=11))
    tasks = read_tasks(tmp_path / name / "tasks.jsonl")
    for t in tasks:
        assert _readability_problems(t["text"], t["reference"]) == [], (t["id"], t["text"], t["reference"])


def test_readability_check_rejects_dictated_text():
    """The check itself fails on the text style of the first generator (so it can fail)."""
    old = (
        "Search the voice catalog for `query_1` (the search words) (gender filter: None); call the result "
        "`voices_1`. Synthesize `text_1` with the voice `voices_1[0]`; call the result `speech_1`. "
        "Finally set `result` to `speech_1`."
    )
    ref = "voices_1 = api.search_voices(query_1, gender=None)\nvoices_2 = api.search_voices(query_1, gender=None)\n"
    problems = _readability_problems(old, ref + "speech_1 = api.text_to_speech(text_1, voices_1[0]['id'])\nresult = speech_1\n")
    assert any("call the result" in p for p in problems) and any("None" in p for p in problems)
    assert any("dead read" in p for p in problems)


def test_coverage_plot_shades_the_spread_across_seeds(tmp_path: Path, monkeypatch):
    """Issue 31: coverage plots showed no spread across seeds; the band spans the lowest and the
    highest seed at each number of programs (by hand on three curves)."""
    from callbench.tracks.stateful import coverage

    assert coverage.spread([[1, 3, 4], [2, 2, 6], [0, 5, 5]]) == ([0.0, 2.0, 4.0], [2.0, 5.0, 6.0])
    pytest.importorskip("matplotlib")
    import matplotlib.axes

    bands = []
    real = matplotlib.axes.Axes.fill_between
    monkeypatch.setattr(matplotlib.axes.Axes, "fill_between", lambda self, x, lo, hi, **kw: bands.append((list(lo), list(hi))) or real(self, x, lo, hi, **kw))
    res = {"scenario": "s", "seeds": 3, "goal": 0.95, "reachable_pairs": 6,
           "samplers": {"energy": {"mean_curve": [1, 10 / 3, 5], "curves": [[1, 3, 4], [2, 2, 6], [0, 5, 5]]}}}
    coverage.plot([res], tmp_path / "c.png")
    assert bands == [([0.0, 2.0, 4.0], [2.0, 5.0, 6.0])] and (tmp_path / "c.png").stat().st_size > 1000
