"""Uncertain inputs: what a scenario does not know, carried through to its predictions.

A scenario's ``uncertain:`` section gives some of its fields a range or a distribution
(:mod:`.spec`); a calibration profile's ``covariance:`` blocks do the same for the fitted
parameters (:mod:`.calibrated`).  ``predict --uncertainty N`` draws N points of a scrambled,
seeded Sobol sequence over them (:mod:`.sampling`), simulates each (:mod:`.propagate`) and
reports the median and the 90 % interval of every headline metric; ``clustersim sensitivity``
ranks the inputs by their Sobol or Morris indices (:mod:`.sensitivity`, with SALib).

Only :mod:`.spec` is imported with a scenario; scipy and SALib come in with the commands.
"""
