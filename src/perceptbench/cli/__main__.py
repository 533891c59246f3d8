"""``python -m perceptbench.cli``: the command line."""

from . import main

main()
