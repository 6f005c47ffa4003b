"""Training on trajectories: expert demonstrations from reference solutions, SFT data with exact
assistant-only loss masks, and the accelerate training loop (`clawgym train sft SPEC`)."""
