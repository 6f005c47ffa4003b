"""Compositional, skill-grounded synthesis: typed data domains, atomic operations declared in YAML
(specs/synth/compose/), and the engine that chains them into concrete, verifiable task specs."""
