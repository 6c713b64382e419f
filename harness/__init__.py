"""normbench harness: config -> plan -> run -> records -> store -> report / compare."""
