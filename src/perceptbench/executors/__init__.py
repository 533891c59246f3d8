"""Executors other than the local one (``perceptbench run --executor ...``).  Each is an
optional extra; the core and the local executor import none of them."""
