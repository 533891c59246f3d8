"""The bottom of the import graph: what every layer above may use and nothing here imports
from above (the package version, task settings, score rows).  ``scripts/check_imports.py``
checks that imports run one way."""
