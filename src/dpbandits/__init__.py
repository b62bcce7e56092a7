"""dpbandits: differentially private contextual bandits, reproducibly."""

__version__ = "0.1.0"
