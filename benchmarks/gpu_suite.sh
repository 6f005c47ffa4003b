#!/usr/bin/env bash
# The GPU suite: everything this project measures on a GPU, in one script, in order, each part
# time-boxed and writing its figures (JSON, and one line of text in summary.txt) as soon as it
# finishes, so a run cut short still returns what it measured.
#
#   env  the machine: GPU, library versions, whether bubblewrap sandboxes start
#   a    SFT speed (benchmarks/sft_speed.py) at the reference shape (SmolLM2-135M, seq 2048,
#        batch 16, bf16): our loop and TRL's SFTTrainer, each plain and with its levers (Liger's
#        fused linear cross-entropy, torch.compile); tokens/s, MFU and the ratios
#   b    the SFT experiment (benchmarks/sft_experiment.py --preset suite): demonstrations on the
#        synthesized training split, the embedded model evaluated before and after SFT on
#        validation-split tasks and benchmark v2 instances (batched generation, 95% CIs)
#   c    GRPO from that checkpoint (benchmarks/rl_experiment.py --preset suite): rl_throughput's
#        figures per step and the held-out pass rate after
#
# Usage (from the repository root):
#   benchmarks/gpu_suite.sh [--parts env,a,b,c] [OUTDIR]   # on the GPU machine ($OUT if set)
#   benchmarks/gpu_suite.sh --dry-run [--fast] OUTDIR        # tiny shapes on CPU: every step, in minutes
#
# Budgets in seconds (GPU defaults, about 11 minutes in all): SUITE_BUDGET_A=200, SUITE_BUDGET_B=300,
# SUITE_BUDGET_C=170. Work folders go to $SUITE_WORK (default: a temporary folder). docs/gpu.md says
# how to carry the model and the wheels to a machine without network and which two commands to run.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

DRY=0
FAST=0
PARTS="env,a,b,c"
OUTDIR="${OUT:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    --fast) FAST=1 ;;
    --parts) PARTS="$2"; shift ;;
    --parts=*) PARTS="${1#--parts=}" ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) echo "gpu_suite: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) OUTDIR="$1" ;;
  esac
  shift
done
if [ -z "$OUTDIR" ]; then
  echo "gpu_suite: no output folder: give one as the last argument or set OUT" >&2
  exit 2
fi
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
WORK="${SUITE_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/clawgym-gpu-suite-XXXXXX")}"
mkdir -p "$WORK"
PYTHON="${PYTHON:-python3}"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false

# a machine without bubblewrap uses the one carried along (benchmarks/carry.py prepare)
if ! command -v bwrap >/dev/null 2>&1 && [ -x "$ROOT/.carry/bin/bwrap" ]; then
  mkdir -p "$WORK/bin" && cp "$ROOT/.carry/bin/bwrap" "$WORK/bin/" && export PATH="$WORK/bin:$PATH"
fi

if [ "$DRY" = 1 ]; then
  BUDGET_A=${SUITE_BUDGET_A:-400}; BUDGET_B=${SUITE_BUDGET_B:-400}; BUDGET_C=${SUITE_BUDGET_C:-400}
  SPEED=(--shape tiny --seq-len 64 --batch 2 --steps 3 --warmup 1 --variant-timeout 200)
  # --fast: one variant of our loop, no TRL (its import alone takes longer than the rest), no compiling
  [ "$FAST" = 1 ] && SPEED+=(--variants clawgym+levers --no-compile)
  SFT=(--preset dry --model tiny)
  RL=(--preset dry)
else
  BUDGET_A=${SUITE_BUDGET_A:-200}; BUDGET_B=${SUITE_BUDGET_B:-300}; BUDGET_C=${SUITE_BUDGET_C:-170}
  SPEED=(--full --seq-len 2048 --batch 16 --steps 30 --warmup 5 --variant-timeout 70)
  SFT=(--preset suite)
  RL=(--preset suite)
fi
MODE=$([ "$DRY" = 1 ] && echo "CPU dry run" || echo "GPU")
echo "gpu suite ($MODE), parts $PARTS, $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$OUTDIR/summary.txt"

# what generates in b and c: the vLLM engine where one is installed for this machine's device
# (clawgym engines install vllm), else transformers in process, said in the summary rather than failing.
# SUITE_POLICY=hf|vllm forces one; the dry run's tiny model has heads too small for vLLM's kernels.
POLICY="${SUITE_POLICY:-auto}"
if [ "$POLICY" = auto ]; then
  POLICY=hf
  if [ "$DRY" != 1 ] && "$PYTHON" -c "from clawgym.engines.install import find; find('vllm')" >/dev/null 2>&1; then
    POLICY=vllm
  fi
  [ "$POLICY" = hf ] && echo "generation: in process (transformers): no vLLM engine installed here (clawgym engines install vllm)" >> "$OUTDIR/summary.txt"
fi
[ "$POLICY" = vllm ] && echo "generation: the vLLM engine (evaluations and GRPO rollouts)" >> "$OUTDIR/summary.txt"
SFT+=(--policy "$POLICY")
RL+=(--policy "$POLICY")

# run_part NAME BUDGET JSON COMMAND...: run within BUDGET seconds; append its summary line (the
# last line starting with PREFIX in $SUMMARY_PREFIX) and the end of its log
run_part() {
  local name=$1 budget=$2 json=$3 prefix=$4
  shift 4
  local log="$WORK/$name.log" start rc line
  start=$(date +%s)
  echo "== part $name (budget ${budget} s): $*" | tee -a "$OUTDIR/log.txt"
  timeout -k 15 "$budget" "$@" > "$log" 2>&1
  rc=$?
  local took=$(( $(date +%s) - start ))
  grep -v -e 'Writing model shards' -e 'Loading weights' "$log" | tail -n 60 >> "$OUTDIR/log.txt"
  line=$(grep "^$prefix" "$log" | tail -n 1)
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    line="${line:-$prefix}: cut at its budget of ${budget} s; what it measured is in $json"
  elif [ "$rc" != 0 ]; then
    line="$prefix failed (exit $rc after ${took} s): $(grep -v '^\s*$' "$log" | tail -n 1 | cut -c1-300)"
  fi
  echo "[$name, ${took} s] $line" | tee -a "$OUTDIR/summary.txt"
  return 0
}

has_part() { case ",$PARTS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

if has_part env; then
  run_part env 120 env.json "machine" "$PYTHON" - "$OUTDIR/env.json" "$DRY" <<'EOF'
import importlib.metadata as md, json, os, shutil, subprocess, sys
env = {"python": sys.version.split()[0], "cpus": os.cpu_count()}
for name in ("torch", "transformers", "accelerate", "peft", "trl", "liger-kernel", "datasets", "gguf", "triton",
             "jsonschema", "datasketch"):
    try:
        env[name] = md.version(name)
    except md.PackageNotFoundError:
        env[name] = None
if sys.argv[2] == "1":  # the dry run: no GPU to name, and importing torch here costs seconds
    env["gpu"] = None
else:
    import torch
    env["gpu"] = torch.cuda.get_device_name() if torch.cuda.is_available() else None
bwrap = shutil.which("bwrap")
env["bwrap"] = bwrap
if bwrap:
    probe = subprocess.run([bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all",
                            "--die-with-parent", "true"], capture_output=True, text=True)
    env["bwrap_ok"] = probe.returncode == 0
    env["bwrap_error"] = probe.stderr.strip()[-300:] or None
json.dump(env, open(sys.argv[1], "w"), indent=1)
print(f"machine: {env['gpu'] or 'no GPU'}, {env['cpus']} CPUs, python {env['python']}, torch {env['torch']}, "
      f"transformers {env['transformers']}, trl {env['trl']}, liger {env['liger-kernel']}, "
      f"bwrap {'works' if env.get('bwrap_ok') else 'MISSING OR FAILING: ' + str(env.get('bwrap_error'))}")
EOF
fi

if has_part a; then
  run_part a "$BUDGET_A" a_sft_speed.json "sft speed" \
    "$PYTHON" benchmarks/sft_speed.py "${SPEED[@]}" --json "$OUTDIR/a_sft_speed.json"
fi

if has_part b; then
  run_part b "$BUDGET_B" b_sft_experiment.json "sft experiment" \
    "$PYTHON" benchmarks/sft_experiment.py "${SFT[@]}" --out "$WORK/sft" --json "$OUTDIR/b_sft_experiment.json"
fi

if has_part c; then
  if [ -f "$WORK/sft/results.json" ]; then
    run_part c "$BUDGET_C" c_rl.json "rl experiment" \
      "$PYTHON" benchmarks/rl_experiment.py --sft "$WORK/sft" "${RL[@]}" --out "$WORK/rl" --json "$OUTDIR/c_rl.json"
  else
    echo "[c] rl experiment skipped: part b left no SFT checkpoint ($WORK/sft/results.json)" | tee -a "$OUTDIR/summary.txt"
  fi
fi
echo "figures in $OUTDIR: $(cd "$OUTDIR" && ls | tr '\n' ' ')"
