"""ClawGym tasks inside other trainers: `trl` (TRL's GRPOTrainer environments) and `verifiers`
(a verifiers environment), both over `driven` trials (the `clawgym run` trial machinery, driven one
tool call at a time) and `taskset` (instances from specs, a synthesized dataset or a benchmark)."""
