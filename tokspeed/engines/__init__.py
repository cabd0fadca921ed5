"""Engines: how much of the hardware's peak an inference engine reaches, and what it costs per step."""

from .profile import EngineProfile, get_engine

__all__ = ["EngineProfile", "get_engine"]
