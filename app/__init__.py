"""calmon: monitoring for rare-positive binary classifiers, measured and prior-calibrated."""

__version__ = "0.1.0"
