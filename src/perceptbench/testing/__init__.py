"""Test helpers that build tiny, randomly initialised, fully offline models.

Nothing here is imported by the library itself; the test suite, the benchmarks and
users without network access (``perceptbench run --model hf:<dir>``) use them.
"""
