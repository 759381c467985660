"""Head scores: prompts, the forward passes and hooks, and every score the detector computes."""
