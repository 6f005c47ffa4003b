"""ClawGym: declarative tasks, isolated rollouts, verification and training for Claw-style agents."""

__version__ = "0.1.0"
API_VERSION = "clawgym/v1"
