"""perceptbench: do vision models see the way people do?

Pipeline (one direction): sources -> stimuli -> tasks -> models + readouts ->
trial records -> metrics -> reports, with the CLI on top.  The core (everything
but ``perceptbench.models`` back-ends) imports without torch.
"""

__version__ = "0.1.0"
