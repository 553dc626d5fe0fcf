"""Devices: anything that maps rows (a, b, c) of bit patterns to outputs d.

One spec names a device in every flow (``run``, ``identify``, ``survey``, ``validate``):

=================  ====================================================================
``preset:NAME``    the numpy model of a preset (a virtual device)
``config:FILE``    the numpy model of an accumulator configuration YAML
=================  ====================================================================

A :class:`Device` knows its formats and K when it has them (virtual devices do) and runs
whole batches: ``device.run(a, b, c)`` with a, b of shape (N, k) and c of shape (N,).

>>> dev = parse_device("preset:h100-fp16-fp32")
>>> dev.name, dev.shape
('preset:h100-fp16-fp32', ('binary16', 'binary32', 'binary32', 16))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mmaprobe.models.accumulator import evaluate
from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.errors import InputError
from mmaprobe.models.presets import get_preset

Shape = tuple[str, str, str, int]
#: device kinds and how a spec of each is written
KINDS = {"preset": "preset:NAME", "config": "config:FILE"}


@dataclass
class Device:
    """A named device: ``run(a, b, c) -> d`` on bit-pattern arrays, in batches.

    ``config`` is set for virtual devices (the model of a preset or configuration).
    """

    name: str
    shape: Shape
    run: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
    config: AccumulatorConfig | None = None

    def __call__(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        return self.run(a, b, c)

    def check_shape(self, shape: Shape, what: str) -> None:
        """An InputError when the device's formats and K differ from ``shape``."""
        if tuple(shape) != tuple(self.shape):
            raise InputError(f"{what}: formats/k {tuple(shape)} do not match the device "
                             f"{self.name} {tuple(self.shape)}")


def virtual_device(cfg: AccumulatorConfig, name: str | None = None) -> Device:
    """A device backed by the numpy model of cfg."""
    def run(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        return evaluate(cfg, a, b, c)
    return Device(name or f"config:{cfg.describe()}",
                  (cfg.in_format, cfg.c_format, cfg.out_format, cfg.k), run, cfg)


def parse_device(spec: str) -> Device:
    """The device a spec names (see the module docstring)."""
    kind, sep, rest = str(spec).partition(":")
    if not sep or not rest or kind not in KINDS:
        raise InputError(f"device {spec!r}: expected one of {', '.join(KINDS.values())}")
    if kind == "preset":
        p = get_preset(rest)
        return virtual_device(p.config, f"preset:{p.name}")
    return virtual_device(AccumulatorConfig.load(rest), f"config:{rest}")


def device_from_args(args) -> Device:
    """The device of --preset NAME, --config FILE or --device SPEC (exactly one given)."""
    given = [(k, getattr(args, k, None)) for k in ("preset", "config", "device")]
    given = [(k, v) for k, v in given if v]
    if len(given) != 1:
        raise InputError("give exactly one of --preset NAME, --config FILE, --device SPEC")
    kind, value = given[0]
    return parse_device(value if kind == "device" else f"{kind}:{value}")
