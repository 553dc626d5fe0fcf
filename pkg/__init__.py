"""mmaprobe: probe, model and check the arithmetic of hardware matrix-multiply units.

Subpackages: ``mmaprobe.models`` (formats, configurations, the bit-exact accumulator model,
device presets, GEMM), ``mmaprobe.smt`` (z3 encoding), ``mmaprobe.probes`` (declarative YAML
probes) and ``mmaprobe.vectors`` (suites, hardware data, the command line).
"""

__version__ = "0.1.0"
