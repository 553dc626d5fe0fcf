"""Formats, accumulator configurations, the bit-exact model, device presets and GEMM.

>>> from mmaprobe.models import get_preset, evaluate
"""

from .accumulator import evaluate
from .config import AccumulatorConfig, ConfigError
from .errors import InputError, MmaprobeError
from .formats import FORMATS, Format, FormatError, get_format
from .reference import reference_dot

__all__ = ["AccumulatorConfig", "ConfigError", "FORMATS", "Format", "FormatError",
           "InputError", "MmaprobeError", "evaluate", "get_format", "reference_dot"]
