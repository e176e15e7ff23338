"""The plan contract (`contract`: what a PLAN block must hold) and the validity tally."""
