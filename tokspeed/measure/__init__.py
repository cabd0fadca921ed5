"""Measuring on this machine: probes of its real limits, a reference decoder, run files.

Nothing here is imported by ``tokspeed predict``; torch/numpy load inside functions only.
"""
