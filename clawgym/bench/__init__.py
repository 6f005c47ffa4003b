"""The benchmark: calibrated, reviewed, versioned task instances under `specs/bench/`, and the
tooling to calibrate, review, diff, run and rank them."""
