"""Scenarios at scale: how a model is laid out over devices, and what that costs per token.

- ``parallel``: the ``--parallel`` grammar (tp, pp, llama.cpp layer split, tp=4,pp=2).
- ``interconnect``: the link between devices (NVLink / Infinity Fabric / PCIe) and ring all-reduce.
- ``offload``: llama.cpp-style layer offload (CPU computes from RAM) and streaming offload
  (Accelerate ``device_map``: weights cross the host link every pass).
- ``layout``: stages (which layers on which device, TP degree), memory per device.
- ``timing``: one forward pass timed over a layout (per stage roofline + link time).
- ``sections``: predict's serving section (its batch curve, ridge batch and rate answer: ``serving.curve``).
"""
