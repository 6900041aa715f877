"""Time to accuracy, analytically: steps to a target from what a simulated run measured.

Statistical efficiency from the large-batch law (McCandlish et al. 2018) and asynchrony terms
shaped by theory with constants to be fitted on emulation; docs/convergence.md explains each.
Imports only numpy, yaml and the project's errors and YAML loader (no simulator, no
algorithms), so it can be tested with closed forms alone.
"""

from clustersim.convergence.asynchrony import (
    delay_curvature,
    gossip_mixing_matrix,
    levin_may_bound,
    mixing_delay,
    second_eigenvalue_modulus,
    uniform_gossip_rho,
)
from clustersim.convergence.largebatch import optimal_batch, pollux_efficiency, steps_integral
from clustersim.convergence.predict import (
    Constants,
    ConvergenceResult,
    RunStats,
    load_constants,
    predict,
    progress_curve,
)
from clustersim.convergence.profile import (
    LR_RULES,
    ConvergenceProfile,
    NoiseSchedule,
    load_profile,
    shipped_profiles,
)

__all__ = [
    "LR_RULES", "Constants", "ConvergenceProfile", "ConvergenceResult", "NoiseSchedule",
    "RunStats", "delay_curvature", "gossip_mixing_matrix", "levin_may_bound", "load_constants",
    "load_profile", "mixing_delay", "optimal_batch", "pollux_efficiency", "predict", "progress_curve",
    "second_eigenvalue_modulus", "shipped_profiles", "steps_integral", "uniform_gossip_rho",
]
