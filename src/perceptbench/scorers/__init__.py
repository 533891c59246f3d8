"""Scorers: the shared scoring maths of the tasks, each owning a metric and its human
reference (ceiling, floor or band) on one object, the way Brain-Score puts a metric and its
ceiling on one benchmark.  A task is a definition (stimuli, prompt, options, human records)
that picks a scorer; the scorers import the metrics (pure numpy) and the columnar records,
never a task.

* :class:`~perceptbench.scorers.human_panel.HumanPanelScorer`: accuracy, B, kappa (aggregate
  and pairwise) against a panel of observers; pairwise and leave-one-out ceilings;
  per-observer rows.
* :class:`~perceptbench.scorers.cell_panel.CellPanelScorer`: the same against a panel whose
  observers each saw one cell of the design (ceilings within cells).
* :class:`~perceptbench.scorers.kernel.KernelOddOneOutScorer`: B against a perceptual
  kernel's odd-one-out; the position floor; the spread between kernels.
* :class:`~perceptbench.scorers.capacity.CapacityScorer`: a(k) and the capacity estimate
  against the human capacity band.
"""
