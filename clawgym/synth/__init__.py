"""Task synthesis: task families expanded by persona and skill routes, an LLM route, quality filters,
near-duplicate removal, balance statistics and dataset output (see docs/synth.md)."""
