"""Deterministic stimuli: source images and renderers (mark chips, numbered montages,
scatterplots).  Pillow only; every renderer is a pure function of its arguments."""
