"""Click groups whose first argument, when it is not a subcommand, goes to a default subcommand
(`clawgym synth SPEC` is `clawgym synth run SPEC`, `clawgym export RUN_DIR` is `clawgym export
trajectories RUN_DIR`)."""

from __future__ import annotations

import click


class DefaultToRun(click.Group):
    """A group whose first argument, when it is not a subcommand, goes to its default subcommand."""

    default_command = "run"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


class DefaultToTrajectories(DefaultToRun):
    default_command = "trajectories"
