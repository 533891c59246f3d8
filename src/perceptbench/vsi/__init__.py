"""The Visual Sensitivity Index (seed 002): everything VSI in one package.

What lives where, and why (each module sits in the lowest import layer its imports allow;
``scripts/check_imports.py`` assigns the layers per module, since this package spans several):

=================  ==================================================================  =========
module             holds                                                               layer
=================  ==================================================================  =========
``samples``        the VSI record format; :class:`~.samples.VSISample` and              scorers
                   :func:`~.samples.vsi_samples`, which pairs every perturbed record
                   with its clean record (KL over top-k: ``metrics.topk_kl``)
``cells``          samples grouped into cells; the per-cell summary (median,             scorers
                   insensitive fractions, argmax change, histogram); quintiles
``scoring``        per-task VSI scoring (the rows of one VSI task), called by            scorers
                   :meth:`VSITask.score <.protocol.VSITask.score>`: below the tasks,
                   like ``scorers/``
``protocol``       :class:`~.protocol.VSITask`, the protocol that asks any task under    tasks
                   clean and perturbed conditions (conditions, stimuli, settings,
                   parsing, confidence prompt); :func:`~.protocol.battery_vsi`, the
                   wrapper that turns a battery task into a VSI task
``benchmarks``     the benchmark definitions (SalBench syn, the wrapped battery tasks,   tasks
                   POPE, HallusionBench, MMVP, MMStar) and ``VSI_TASKS``, listed by
                   ``tasks/registry.py``; their dataset loaders stay in ``external/``
                   with every other loader of an external benchmark
``features``       the feature store of the encoder-LLM probe, writer (run time) and     respond
                   reader (scoring, numpy only) together, so its file layout is
                   spelled once
``respondent``     the VSI respondent (registered in ``respond.RESPONDENTS``) and its    respond
                   trials: clean answers with distributions, perturbed prefills,
                   probe features; the building blocks the image-withheld condition
                   (``respond/withheld.py``) reuses
``analysis``       the cross-task analyses (seed 002 §2.3-§4) over VSI samples           scoring
``probe``          the encoder-LLM gap rows from the feature store                       scoring
``suite``          the analyses as a suite analysis (registered in                       scoring
                   ``analyses.SUITE_ANALYSES``, which scoring iterates)
=================  ==================================================================  =========

The statistics with no VSI knowledge stay in ``metrics/`` (numpy/scipy, importing nothing above
it): ``topk_kl`` (KL between truncated distributions), ``error_detection`` (AUROC, PRR, ECE,
Brier, paired bootstrap difference), ``permutation`` (permutation Spearman), ``probe`` (the
grouped linear probe and its bootstrap over images), ``bootstrap``.

This ``__init__`` imports nothing: importing any module of the package runs it first, and the
modules sit in different layers (importing the respondent here would pull the respond layer
into the tasks layer's import of the benchmarks).
"""
