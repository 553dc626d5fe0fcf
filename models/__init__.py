"""Formats, accumulator configurations, the bit-exact model, device presets and GEMM.

>>> import numpy as np
>>> from mmaprobe.models import evaluate, get_format, get_preset, reference_dot
>>> cfg = get_preset("h100-fp16-fp32").config
>>> f16 = get_format("binary16")
>>> a = np.array([[f16.exact_bits(x) for x in (1.5, 2**-12, 2**-12, 0) * 4]], np.uint64)
>>> d = evaluate(cfg, a, a, np.zeros(1, np.uint64))
>>> hex(int(d[0])), int(d[0]) == reference_dot(cfg, a[0], a[0], 0)
('0x41100000', True)
"""

from .accumulator import evaluate
from .config import AccumulatorConfig, ConfigError
from .errors import InputError, MmaprobeError
from .formats import FORMATS, Format, FormatError, get_format
from .presets import Preset, get_preset, list_presets
from .reference import reference_dot

__all__ = ["AccumulatorConfig", "ConfigError", "FORMATS", "Format", "FormatError",
           "InputError", "MmaprobeError", "Preset", "evaluate", "get_format", "get_preset",
           "list_presets", "reference_dot"]
