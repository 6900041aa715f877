"""The convergence layer: statistical efficiency of training (steps to a target), next to the
simulator's hardware efficiency (time per step)."""
