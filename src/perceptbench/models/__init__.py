"""Model back-ends.  This package's ``__init__`` imports nothing heavy: each adapter
module imports torch / transformers / httpx lazily, so ``perceptbench tasks`` and
``perceptbench score`` never import torch."""
