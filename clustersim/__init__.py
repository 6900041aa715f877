"""clustersim: predict, measure and explain data-parallel training scaling on clusters."""

__version__ = "0.1.0"
