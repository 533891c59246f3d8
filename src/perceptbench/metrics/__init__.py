"""Metrics over trial-level arrays (numpy only): agreement B, error consistency kappa
with human-human ceilings, floors, null brackets, capacity a(k), and a vectorised seeded
percentile bootstrap over stimuli."""
