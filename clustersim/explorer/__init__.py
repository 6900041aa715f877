"""``clustersim explore``: a live what-if explorer (Dash) over a tidy table of sweep points.

The app reads one table, one row per simulated point, with input columns (the axes) and metric
columns (:mod:`clustersim.explorer.table` says which), lets the user pick the x axis, metric,
colour and facet, fixes the other axes with linked controls, and computes points that are not
in the table yet (network bandwidth/latency factors of a scenario) in a background thread with
its progress shown.  dash and plotly are imported only by this package, which only the
``explore`` command imports.
"""
