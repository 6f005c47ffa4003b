"""One prepared input tree per task instance: the trials of a group copy it, the verifier grades
against it, its digest is checked and recorded."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym.cli.main import main
from clawgym.compile.compiler import compile_task, load_task_spec
from clawgym.compile.prepared import PreparedInputs, clone_tree, inputs_digest, tree_digest
from clawgym.errors import InfraError

ROOT = Path(__file__).resolve().parents[2]


def test_one_tree_per_instance_read_only_and_cloned_writable(tmp_path):
    task = compile_task(load_task_spec(ROOT / "benchmarks" / "fixtures" / "light" / "receipts-total.yaml"), 3)
    prepared = PreparedInputs()
    try:
        tree, digest = prepared.get(task)
        assert prepared.get(task) == (tree, digest)  # materialised once
        assert digest == inputs_digest(task.files, task.executables) == tree_digest(tree)
        assert stat.S_IMODE(os.stat(tree).st_mode) == 0o555
        assert stat.S_IMODE(os.stat(tree.parent).st_mode) == 0o700  # no sandbox uid can look in
        some = next(iter(task.files))
        assert stat.S_IMODE(os.stat(tree / some).st_mode) in (0o444, 0o555)
        clone_tree(tree, tmp_path / "ws")
        assert tree_digest(tmp_path / "ws") == digest
        (tmp_path / "ws" / some).write_bytes(b"changed")  # a copy, not a link
        assert (tree / some).read_bytes() == task.files[some]
        prepared.check(tree, digest)
        os.chmod(tree / some, 0o644)
        (tree / some).write_bytes(b"tampered")
        with pytest.raises(InfraError, match="changed before grading"):
            prepared.check(tree, digest)
    finally:
        root = prepared._root
        prepared.clear()
    assert root is not None and not root.exists()


def test_group_trials_share_inputs_and_record_their_digest(lib):
    (lib / "specs" / "run.yaml").write_text(
        "apiVersion: clawgym/v1\nkind: Run\nname: t\ntasks: [good.yaml]\nseeds: [0, 1]\nattempts: 3\n"
        "agents: [{type: oracle}, {type: nop}]\nconcurrency: 4\nout: out\n"
    )
    result = CliRunner().invoke(main, ["run", "specs/run.yaml", "--quiet"])
    assert result.exit_code == 0, result.output
    recs = [json.loads(p.read_text()) for p in (lib / "out" / "trials").glob("*/record.json")]
    assert len(recs) == 12
    by_seed: dict[int, set[str]] = {}
    for rec in recs:
        assert rec["status"] == ("passed" if rec["agent"]["name"] == "oracle" else "failed")
        by_seed.setdefault(rec["task"]["seed"], set()).add(rec["inputs_sha256"])
    assert all(len(d) == 1 for d in by_seed.values()) and by_seed[0] != by_seed[1]
    assert "good.s0.oracle.a1" in {r["trial_id"] for r in recs}
    from clawgym.files.tempdirs import work_root

    assert not list(work_root().glob(f"clawgym-prepared-{os.getpid()}-*")), "prepared trees outlived the run"
