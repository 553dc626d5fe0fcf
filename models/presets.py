"""Device presets: named accumulator configurations with their sources (presets.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .config import AccumulatorConfig, ConfigError
from .errors import InputError
from .formats import get_format
from .yamldoc import load_doc

PRESETS_FILE = Path(__file__).resolve().parent / "presets.yaml"

ARCHITECTURES = {
    "V100": "NVIDIA Volta", "T4": "NVIDIA Turing", "A100": "NVIDIA Ampere",
    "A2": "NVIDIA Ampere", "A30": "NVIDIA Ampere", "L40S": "NVIDIA Ada Lovelace",
    "Ada": "NVIDIA Ada Lovelace (RTX 1000 Ada)", "RTX4090": "NVIDIA Ada Lovelace",
    "H100": "NVIDIA Hopper", "H200": "NVIDIA Hopper", "B200": "NVIDIA Blackwell",
    "RTXPRO6000": "NVIDIA RTX Blackwell (RTX PRO 6000)", "MI100": "AMD CDNA1",
    "MI250X": "AMD CDNA2",
    "MI300X": "AMD CDNA3",
}


@dataclass(frozen=True)
class Preset:
    """A device's configuration for one instruction shape and format pair, with the table
    or section of the literature (or the measurement) it comes from."""

    name: str
    device: str
    instruction: str
    citation: str
    config: AccumulatorConfig

    @property
    def architecture(self) -> str:
        return ARCHITECTURES.get(self.device, "")


@cache
def _load() -> dict[str, Preset]:
    doc = load_doc(PRESETS_FILE, "device presets")
    presets: dict[str, Preset] = {}
    for i, entry in enumerate(doc.data["entries"]):
        where = f"presets.yaml:{doc.line(('entries', i))} ({entry.get('suffix')})"
        try:
            cfg = AccumulatorConfig.from_dict(entry["config"], where)
        except ConfigError as e:  # a broken shipped preset is a bug, say where
            raise AssertionError(str(e)) from None
        for dev in entry["devices"]:
            name = f"{dev}-{entry['suffix']}".lower()
            if name in presets:
                raise AssertionError(f"{where}: duplicate preset {name}")
            presets[name] = Preset(name, dev, entry["instruction"], entry["cite"], cfg)
    return presets


def list_presets() -> list[Preset]:
    """Every device preset, in the order of presets.yaml."""
    return list(_load().values())


def get_preset(name: str) -> Preset:
    """The preset of this name (case-insensitive); an InputError lists the valid names.

    >>> p = get_preset("V100-fp16-fp32")
    >>> p.device, p.config.k, p.config.neab
    ('V100', 4, 0)
    """
    presets = _load()
    key = name.strip().lower()
    if key not in presets:
        raise InputError(f"unknown preset {name!r}; valid presets: {', '.join(presets)}")
    return presets[key]


def presets_with(fin: str, fc: str, fout: str, k: int,
                 operands: tuple[str | None, str | None, int | None] | None = None
                 ) -> list[Preset]:
    """Presets whose configuration has these canonical formats and K, and these operands
    (b's format, scale_format, scale_block; default: b in fin, no block scaling)."""
    b, sf, sb = operands or (None, None, None)
    want = (b or fin, sf, sb)
    return [p for p in list_presets() if p.config.in_format == fin and p.config.c_format == fc
            and p.config.out_format == fout and p.config.k == k
            and p.config.operands == want]


def presets_for(device: str, in_format: str | None = None, out_format: str | None = None,
                k: int | None = None) -> list[Preset]:
    """Presets of one device (case-insensitive), optionally filtered by formats and k."""
    fin = get_format(in_format).name if in_format else None
    fout = get_format(out_format).name if out_format else None
    return [p for p in list_presets() if p.device.lower() == device.lower()
            and (fin is None or p.config.in_format == fin)
            and (fout is None or p.config.out_format == fout)
            and (k is None or p.config.k == k)]
