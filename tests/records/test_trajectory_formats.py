"""Trajectory datasets in OpenAI, ShareGPT and Hugging Face form: export, import, round trips, errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym.cli.main import main
from clawgym.errors import ClawgymError
from clawgym.interop.trajectory_formats import (
    from_openai_row,
    from_sharegpt_row,
    read_any,
    to_openai_row,
    to_sharegpt_row,
)
from clawgym.policy.scripted import tool_call
from clawgym.records.store import collect_run, read_jsonl, reward_of, status_of
from clawgym.records.trajectory import Trajectory

from conftest import BWRAP_PROBLEM, FIXTURE_LIB
from test_trajectories import fake_run

PATH = {"type": "object", "properties": {"path": {"type": "string"}}}
TOOLS = [
    {"type": "function", "function": {"name": "read", "description": "Read a file.", "parameters": PATH}},
    {"type": "function", "function": {"name": "exec", "parameters": {"type": "object", "properties": {}}}},
]


def multi() -> Trajectory:
    """A trajectory with a two-call turn (results recorded out of order), a call whose arguments are not
    JSON, content as a list of parts, and assistant content None."""
    t = Trajectory(
        task={
            "name": "sum",
            "id": "sum@4",
            "hash": "h4",
            "seed": 4,
            "category": "systems",
            "params": {"n": 4},
            "spec_file": "specs/sum.yaml",
        },
        agent={"type": "claw", "name": "claw-x", "policy": {"type": "scripted"}},
    )
    t.tools = TOOLS
    t.messages = [
        {"role": "system", "content": "You are Claw."},
        {"role": "user", "content": [{"type": "text", "text": "Sum "}, {"type": "text", "text": "it."}]},
        {
            "role": "assistant",
            "content": "Looking first.",
            "tool_calls": [tool_call("read", "r1", path="in.txt"), tool_call("exec", "e1", command="wc -l in.txt")],
        },
        {"role": "tool", "tool_call_id": "e1", "content": "4 in.txt"},
        {"role": "tool", "tool_call_id": "r1", "content": "1\n2\n"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "x1", "type": "function", "function": {"name": "exec", "arguments": "{not json"}},
                {"id": "x2", "type": "function", "function": {"name": "read", "arguments": {"path": "ü.txt"}}},
            ],
        },
        {"role": "tool", "tool_call_id": "x1", "content": "error: bad arguments"},
        {"role": "tool", "tool_call_id": "x2", "content": "[]"},
        {"role": "assistant", "content": "The total is 3."},
    ]
    t.verdict = {"status": "failed", "reward": 0.5, "trial_id": "sum.s4.claw-x.a0", "error": None}
    return t.finish("completed")


def call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


# The messages of multi() as an OpenAI row holds them: parts joined, arguments as JSON strings.
OPENAI_MESSAGES = [
    {"role": "system", "content": "You are Claw."},
    {"role": "user", "content": "Sum it."},
    {
        "role": "assistant",
        "content": "Looking first.",
        "tool_calls": [call("r1", "read", '{"path": "in.txt"}'), call("e1", "exec", '{"command": "wc -l in.txt"}')],
    },
    {"role": "tool", "tool_call_id": "e1", "content": "4 in.txt"},
    {"role": "tool", "tool_call_id": "r1", "content": "1\n2\n"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("x1", "exec", "{not json"), call("x2", "read", '{"path": "ü.txt"}')],
    },
    {"role": "tool", "tool_call_id": "x1", "content": "error: bad arguments"},
    {"role": "tool", "tool_call_id": "x2", "content": "[]"},
    {"role": "assistant", "content": "The total is 3."},
]

# ... and as a ShareGPT round trip gives them back: ids call_<turn>_<k>, results in the order of the calls.
SHAREGPT_MESSAGES = [
    {"role": "system", "content": "You are Claw."},
    {"role": "user", "content": "Sum it."},
    {
        "role": "assistant",
        "content": "Looking first.",
        "tool_calls": [
            call("call_0_0", "read", '{"path": "in.txt"}'),
            call("call_0_1", "exec", '{"command": "wc -l in.txt"}'),
        ],
    },
    {"role": "tool", "tool_call_id": "call_0_0", "content": "1\n2\n"},
    {"role": "tool", "tool_call_id": "call_0_1", "content": "4 in.txt"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_1_0", "exec", "{not json"), call("call_1_1", "read", '{"path": "ü.txt"}')],
    },
    {"role": "tool", "tool_call_id": "call_1_0", "content": "error: bad arguments"},
    {"role": "tool", "tool_call_id": "call_1_1", "content": "[]"},
    {"role": "assistant", "content": "The total is 3."},
]


def test_openai_row_layout_and_exact_round_trip():
    row = to_openai_row(multi())
    assert set(row) == {"messages", "tools", "metadata"}
    assert row["messages"] == OPENAI_MESSAGES and row["tools"] == TOOLS
    assert row["metadata"] == {
        "format": "clawgym.trajectory/v1",
        "task_id": "sum@4",
        "task_name": "sum",
        "task_hash": "h4",
        "seed": 4,
        "category": "systems",
        "reward": 0.5,
        "status": "failed",
        "outcome": "completed",
        "agent": "claw-x",
        "agent_type": "claw",
        "trial_id": "sum.s4.claw-x.a0",
    }
    back = from_openai_row(json.loads(json.dumps(row)))
    assert back.messages == OPENAI_MESSAGES and back.tools == TOOLS
    assert back.task == {"name": "sum", "id": "sum@4", "hash": "h4", "seed": 4, "category": "systems"}
    assert back.verdict == {"status": "failed", "reward": 0.5, "trial_id": "sum.s4.claw-x.a0"}
    assert back.agent == {"type": "claw", "name": "claw-x"} and back.final_message == "The total is 3."
    assert to_openai_row(back) == row  # a second round changes nothing


def test_sharegpt_layout():
    row = to_sharegpt_row(multi())
    assert row["system"] == "You are Claw." and json.loads(row["tools"]) == TOOLS
    assert row["metadata"] == to_openai_row(multi())["metadata"]
    assert row["conversations"] == [
        {"from": "human", "value": "Sum it."},
        {"from": "gpt", "value": "Looking first."},
        {"from": "function_call", "value": '{"name": "read", "arguments": {"path": "in.txt"}}'},
        {"from": "function_call", "value": '{"name": "exec", "arguments": {"command": "wc -l in.txt"}}'},
        {"from": "observation", "value": "1\n2\n"},  # ordered by the calls they answer
        {"from": "observation", "value": "4 in.txt"},
        {"from": "function_call", "value": '{"name": "exec", "arguments": "{not json"}'},
        {"from": "function_call", "value": '{"name": "read", "arguments": {"path": "ü.txt"}}'},
        {"from": "observation", "value": "error: bad arguments"},
        {"from": "observation", "value": "[]"},
        {"from": "gpt", "value": "The total is 3."},
    ]


def test_sharegpt_round_trip_relinks_calls_by_order():
    back = from_sharegpt_row(json.loads(json.dumps(to_sharegpt_row(multi()))))
    assert back.messages == SHAREGPT_MESSAGES
    assert back.tools == TOOLS and back.task["id"] == "sum@4" and back.task["name"] == "sum"
    assert reward_of(back) == 0.5 and status_of(back) == "failed"
    assert to_sharegpt_row(back) == to_sharegpt_row(multi())


def test_sharegpt_import_reads_parallel_call_lists_and_plain_rows():
    row = {
        "conversations": [
            {"from": "human", "value": "hi"},
            {
                "from": "function_call",
                "value": json.dumps(
                    [{"name": "read", "arguments": {"path": "a"}}, {"name": "read", "arguments": '{"path": "b"}'}]
                ),
            },
            {"from": "observation", "value": "A"},
            {"from": "observation", "value": "B"},
            {"from": "gpt", "value": "ok"},
        ],
        "tools": TOOLS,
    }
    t = from_sharegpt_row(row, file="data/plain.jsonl", line=7)
    assert t.messages[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_0_0", "read", '{"path": "a"}'), call("call_0_1", "read", '{"path": "b"}')],
    }
    assert [m.get("tool_call_id") for m in t.messages[2:4]] == ["call_0_0", "call_0_1"]
    assert t.tools == TOOLS and t.verdict is None  # no metadata: unknown provenance, from where it came
    assert t.task == {"name": "plain", "id": "plain:7", "source": "data/plain.jsonl:7"}


@pytest.mark.parametrize(
    "messages, problem",
    [
        (
            [{"role": "user", "content": "a"}, {"role": "system", "content": "late"}],
            "a system message after the start cannot be written as ShareGPT",
        ),
        (
            [{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "c", "content": "r"}],
            "a tool result does not follow an assistant turn with calls",
        ),
        (
            [
                {"role": "assistant", "content": None, "tool_calls": [tool_call("read", "c1")]},
                {"role": "tool", "tool_call_id": "zz", "content": "r"},
            ],
            "tool results do not answer the calls before them one to one",
        ),
    ],
)
def test_sharegpt_export_refuses_what_it_cannot_hold(messages, problem):
    t = Trajectory(task={"name": "x"}, agent={"type": "claw"}, messages=messages)
    with pytest.raises(ClawgymError) as err:
        to_sharegpt_row(t)
    assert err.value.format() == problem
    assert from_openai_row(to_openai_row(t)).messages == messages  # the OpenAI form holds them


# ---------------------------------------------------------------------------------------------
# A real results folder, through the command line


GOOD = [
    {
        "content": "Let me look.",
        "tool_calls": [
            tool_call("read", "r", path="input/numbers.txt"),
            tool_call("exec", "e", command="mkdir -p output"),
        ],
    },
    {"content": None, "tool_calls": [tool_call("write", "w", path="output/total.txt", content="3\n")]},
    "The total is 3.",
]
BAD = [{"content": None, "tool_calls": [tool_call("write", "w", path="output/total.txt", content="99\n")]}, "Done."]


@pytest.fixture(scope="module")
def real_run(tmp_path_factory) -> Path:
    """`clawgym run` of the fixture task with oracle, nop and two scripted claw agents (one passes)."""
    if BWRAP_PROBLEM:
        pytest.skip(BWRAP_PROBLEM)
    root = tmp_path_factory.mktemp("real") / "lib"
    shutil.copytree(FIXTURE_LIB, root, ignore=shutil.ignore_patterns("bad"))
    spec = {
        "apiVersion": "clawgym/v1",
        "kind": "Run",
        "name": "t",
        "tasks": ["specs/good.yaml"],
        "seeds": [0],
        "out": "out",
        "agents": [
            {"type": "oracle"},
            {"type": "nop"},
            {"type": "claw", "name": "claw-good", "policy": {"type": "scripted", "turns": GOOD}},
            {"type": "claw", "name": "claw-bad", "policy": {"type": "scripted", "turns": BAD}},
        ],
    }
    (root / "run.yaml").write_text(json.dumps(spec))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        result = CliRunner().invoke(main, ["run", "run.yaml", "--quiet"])
    assert result.exit_code == 0, result.output
    return root / "out"


def cli(*args: str):
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result


def relink(messages):
    """`messages` with call ids as a ShareGPT import generates them (call_<assistant turn>_<k>)."""
    out, ids, turn = [], {}, 0
    for m in json.loads(json.dumps(messages)):
        for k, c in enumerate(m.get("tool_calls") or []):
            ids[c["id"]] = c["id"] = f"call_{turn}_{k}"
        if m.get("tool_call_id"):
            m["tool_call_id"] = ids[m["tool_call_id"]]
        turn += m["role"] == "assistant"
        out.append(m)
    return out


@pytest.mark.parametrize("fmt", ["openai", "sharegpt"])
def test_real_run_round_trips_through_the_command_line(real_run, tmp_path, fmt):
    exported = tmp_path / f"{fmt}.jsonl"
    result = cli("export", "trajectories", real_run, "--format", fmt, "--out", exported)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"wrote 2 trajectories to {exported} ({fmt})",
        "skipped 2: no messages",
        "filtered out 0 of 4 trials",
    ]
    rows = [json.loads(x) for x in exported.read_text().splitlines()]
    assert all(("messages" if fmt == "openai" else "conversations") in r for r in rows)
    imported = tmp_path / "back.jsonl"
    result = cli("import", "trajectories", exported, "--out", imported)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"imported 2 from {exported} ({fmt})",
        f"wrote 2 trajectories to {imported}; skipped 0",
    ]
    originals = {t.agent["name"]: t for t in collect_run(real_run) if t.messages}
    back = {t.agent["name"]: t for t in read_jsonl(imported)}
    assert set(back) == set(originals) == {"claw-good", "claw-bad"}
    for name, orig in originals.items():
        got = back[name]
        assert got.messages == (orig.messages if fmt == "openai" else relink(orig.messages))
        assert got.tools == orig.tools and len(got.tools) > 3
        assert got.task == {k: orig.task[k] for k in ("name", "id", "hash", "seed", "category")}
        assert (reward_of(got), status_of(got)) == (reward_of(orig), status_of(orig))
        assert got.verdict["trial_id"] == orig.verdict["trial_id"] and got.agent["type"] == "claw"
    assert (
        status_of(back["claw-good"]) == "passed" and reward_of(back["claw-bad"]) == 0.0
    )  # a wrong total: existence earns nothing
    assert [len(m.get("tool_calls") or []) for m in back["claw-good"].messages] == [0, 0, 2, 0, 0, 1, 0, 0]


def test_real_run_backward_compatible_export_and_clawgym_import(real_run, tmp_path):
    out = tmp_path / "t.jsonl"
    result = cli("export", real_run, "--out", out, "--min-reward", "1")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [f"wrote 2 trajectories to {out} (clawgym)", "filtered out 2 of 4 trials"]
    assert sorted(t.agent["name"] for t in read_jsonl(out)) == ["claw-good", "oracle"]
    again = tmp_path / "again.jsonl"
    result = cli("import", "trajectories", out, "--out", again, "--format", "clawgym")
    assert result.exit_code == 0 and f"imported 2 from {out} (clawgym)" in result.output
    assert [t.to_dict() for t in read_jsonl(again)] == [t.to_dict() for t in read_jsonl(out)]


def test_export_filters_by_reward_status_and_category(tmp_path):
    run = fake_run(tmp_path / "run")  # a passed (1.0, productivity), failed (0.25, systems), error (systems)
    out = tmp_path / "o.jsonl"

    def export(*flags):
        result = cli("export", "trajectories", run, "--format", "openai", "--out", out, *flags)
        assert result.exit_code == 0, result.output
        return result.output.splitlines(), [json.loads(x)["metadata"]["task_id"] for x in out.read_text().splitlines()]

    lines, ids = export()
    assert ids == ["a@0", "b@0"] and lines[1:] == ["skipped 1: no messages", "filtered out 0 of 3 trials"]
    assert export("--min-reward", "0.5") == (
        [f"wrote 1 trajectories to {out} (openai)", "filtered out 2 of 3 trials"],
        ["a@0"],
    )
    assert export("--status", "failed", "--status", "error")[1] == ["b@0"]
    assert export("--category", "systems", "--min-reward", "0")[1] == ["b@0"]
    assert export("--category", "nothing")[0] == [
        f"wrote 0 trajectories to {out} (openai)",
        "filtered out 3 of 3 trials",
    ]


def test_export_needs_somewhere_to_write(tmp_path):
    result = cli("export", "trajectories", fake_run(tmp_path / "run"), "--format", "sharegpt")
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: nothing to write (give --out FILE.jsonl and/or --hf FOLDER)"


def test_hf_dataset_round_trip(tmp_path):
    datasets = pytest.importorskip("datasets", reason="the `datasets` package is not installed")
    run = fake_run(tmp_path / "run")
    hf = tmp_path / "hf"
    result = cli("export", "trajectories", run, "--hf", hf)
    assert result.exit_code == 0 and f"saved a dataset of 3 rows to {hf}" in result.output
    out = tmp_path / "back.jsonl"
    result = cli("import", "trajectories", hf, "--out", out)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"imported 2 from {hf} (hf), skipped 1 without messages",
        f"wrote 2 trajectories to {out}; skipped 1",
    ]
    originals = [t for t in collect_run(run) if t.messages]
    back = list(read_jsonl(out))
    assert [t.messages for t in back] == [t.messages for t in originals]
    assert [t.tools for t in back] == [t.tools for t in originals]
    assert [t.task for t in back] == [
        {k: t.task[k] for k in ("name", "id", "hash", "seed", "category")} for t in originals
    ]
    assert [(reward_of(t), status_of(t)) for t in back] == [(1.0, "passed"), (0.25, "failed")]
    # a dataset with only a messages column in OpenAI form: unknown provenance, located by row
    plain = tmp_path / "plain"
    datasets.Dataset.from_list(
        [{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}]
    ).save_to_disk(str(plain))
    [t] = read_any(plain)
    assert t.messages[1] == {"role": "assistant", "content": "a"} and t.verdict is None
    assert t.task == {"name": "plain", "id": "plain:rows[0]", "source": f"{plain} rows[0]"}


# ---------------------------------------------------------------------------------------------
# Bad input


def bad_file(tmp_path, fmt, line) -> Path:
    """A file whose first line is a good row of `fmt`, the second blank and the third `line`."""
    good = (to_openai_row if fmt == "openai" else to_sharegpt_row)(multi())
    path = tmp_path / f"{fmt}.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + line + "\n")
    return path


@pytest.mark.parametrize(
    "fmt, line, problem",
    [
        (
            "openai",
            "{not json",
            "3: not a JSON object: Expecting property name enclosed in double quotes (column 2) "
            "(each line must hold one whole row)",
        ),
        (
            "openai",
            '{"messages": "hi"}',
            '3: expected an object with a "messages" list, got messages of type str '
            '(an OpenAI row is {"messages": [{"role": "user", "content": "..."}, ...], '
            '"tools": [...]})',
        ),
        (
            "openai",
            '{"messages": [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}]}',
            "3: messages[1]: unknown role 'robot' (a message is {\"role\": one of system, developer, user, assistant, "
            'tool, "content": ...})',
        ),
        (
            "openai",
            '{"messages": [{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}]}',
            '3: messages[0].tool_calls[0]: a tool call needs a function name (a tool call is {"id": ..., "type": '
            '"function", "function": {"name": ..., "arguments": "{...}"}})',
        ),
        (
            "openai",
            '{"messages": [], "tools": "[oops"}',
            "3: tools: tools is not JSON: Expecting value (column 2) (tools must be a list of function-tool schemas, "
            "or a JSON string of one)",
        ),
        (
            "sharegpt",
            '{"conversations": [{"from": "human", "value": "a"}, {"from": "function_call", "value": "read"}]}',
            "3: conversations[1]: function_call value is not JSON: Expecting value (column 1) (a function_call value is "
            'JSON {"name": ..., "arguments": {...}}, or a list of those)',
        ),
        (
            "sharegpt",
            '{"conversations": [{"from": "human", "value": "a"}, {"from": "observation", "value": "r"}]}',
            "3: conversations[1]: observation answers no function_call (each observation must follow the "
            "function_call it answers)",
        ),
        (
            "sharegpt",
            '{"conversations": [{"from": "bot", "value": "a"}]}',
            "3: conversations[0]: unknown speaker 'bot' (from is one of human, user, gpt, assistant, function_call, "
            "observation, tool, system)",
        ),
        (
            "sharegpt",
            '{"messages": []}',
            '3: expected an object with a "conversations" list, got keys messages '
            '(a ShareGPT row is {"conversations": [{"from": "human"|"gpt"|'
            '"function_call"|"observation", "value": "..."}], "system": "...", '
            '"tools": "[...]"})',
        ),
    ],
)
def test_bad_line_errors_name_file_and_line(tmp_path, fmt, line, problem):
    path = bad_file(tmp_path, fmt, line)
    rows = read_any(path)
    assert next(rows).task["id"] == "sum@4"
    with pytest.raises(ClawgymError) as err:
        next(rows)
    assert err.value.format() == f"{path}:{problem}"
    out = tmp_path / "out.jsonl"
    result = cli("import", "trajectories", path, "--out", out)
    assert result.exit_code == 2 and result.stderr == f"error: {path}:{problem}\n"
    assert not out.exists()  # nothing half-written


def test_unknown_formats_say_what_is_accepted(tmp_path):
    accepted = (
        "(accepted: clawgym trajectories (lines with format/task/agent), OpenAI rows "
        '({"messages": [...]}), ShareGPT rows ({"conversations": [...]}), as JSONL or a JSON array, '
        "or a Hugging Face dataset folder written by save_to_disk)"
    )
    odd = tmp_path / "odd.jsonl"
    odd.write_text('\n{"prompt": "p", "completion": "c"}\n')
    result = cli("import", "trajectories", odd, "--out", tmp_path / "o.jsonl")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {odd}:2: unknown trajectory format (first row has keys completion, prompt) {accepted}\n"
    )
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(ClawgymError) as err:
        list(read_any(folder))
    assert err.value.format() == (
        f"{folder}: unknown trajectory format: a folder without dataset_info.json, "
        f"state.json or dataset_dict.json {accepted}"
    )
    with pytest.raises(ClawgymError, match="a file cannot be read as hf"):
        list(read_any(odd, "hf"))


def test_import_several_sources_and_json_arrays(tmp_path):
    openai = tmp_path / "a.jsonl"
    openai.write_text(json.dumps(to_openai_row(multi())) + "\n" + json.dumps({"messages": []}) + "\n")
    sharegpt = tmp_path / "b.json"  # LLaMA-Factory ships ShareGPT data as one JSON array
    sharegpt.write_text(json.dumps([to_sharegpt_row(multi()), {"conversations": [{"from": "human", "value": "q"}]}]))
    out = tmp_path / "all.jsonl"
    result = cli("import", "trajectories", openai, sharegpt, "--out", out)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"imported 1 from {openai} (openai), skipped 1 without messages",
        f"imported 2 from {sharegpt} (sharegpt)",
        f"wrote 3 trajectories to {out}; skipped 1",
    ]
    got = list(read_jsonl(out))
    assert [t.task["id"] for t in got] == ["sum@4", "sum@4", "b:[1]"]
    assert got[2].task["source"] == f"{sharegpt} [1]" and got[2].messages == [{"role": "user", "content": "q"}]
    assert got[0].messages == OPENAI_MESSAGES and got[1].messages == SHAREGPT_MESSAGES
    result = cli("import", "trajectories", openai, "--out", out, "--format", "sharegpt")
    assert result.exit_code == 2 and 'a.jsonl:1: expected an object with a "conversations" list' in result.stderr


def test_reading_a_dataset_folder_without_datasets_says_how_to_install(tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_datasets(name, *a, **k):
        if name == "datasets":
            raise ImportError("no datasets")
        return real(name, *a, **k)

    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "dataset_info.json").write_text("{}")
    monkeypatch.setattr(builtins, "__import__", no_datasets)
    result = cli("import", "trajectories", tmp_path / "ds", "--out", tmp_path / "o.jsonl")
    assert result.exit_code == 3
    assert result.stderr == (
        "error: reading a Hugging Face dataset needs the `datasets` package (pip install datasets)\n"
    )
