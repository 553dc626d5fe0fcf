"""The shipped probe library and published suites, and loading probe files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmaprobe.models.errors import InputError
from mmaprobe.models.yamldoc import Doc, load_docs

from .probe import Probe
from .schema import parse_probe

#: folder of the published suites (Fasi et al., FTTN, Khattak & Mikaitis)
SUITES_DIR = "published"

PACKAGE_DIR = Path(__file__).resolve().parent


def load_probes(paths: list[Path | str]) -> list[Probe]:
    """Probes of the given files, with ids unique across them."""
    probes: list[Probe] = []
    seen: dict[str, str] = {}
    for p in paths:
        docs = load_docs(p, what="probe file")
        if not docs:
            raise InputError(f"{p}: no probe in the file (it is empty or holds only comments)")
        for doc in docs:
            probe = parse_probe(doc)
            if probe.id in seen:
                raise doc.error(("id",), f"unique id; {probe.id!r} is also defined in "
                                         f"{seen[probe.id]}")
            seen[probe.id] = f"{doc.file}:{doc.line(('id',))}"
            probes.append(probe)
    return probes


def library_files(folder: str = "library") -> list[Path]:
    return sorted((PACKAGE_DIR / folder).glob("*.yaml"))


def load_text(text: str, name: str = "<text>") -> list[Probe]:
    return [parse_probe(d) for d in load_docs(name, text)]


def probes_from_documents(documents: dict[str, Any], where: str) -> list[Probe]:
    """Probes embedded as plain documents (id -> document), e.g. in a suite file; each
    document is validated like a probe file, errors naming ``where`` and the probe id."""
    out = []
    for pid, data in documents.items():
        out.append(parse_probe(Doc(data, f"{where} (probe {pid})", {})))
    return out


def suite_names() -> list[str]:
    """Names of the published suites shipped with mmaprobe."""
    return [p.stem for p in library_files(SUITES_DIR)]


def suite_probes(suite: str) -> list[Probe]:
    """The probes of a published suite, by name or as a YAML file."""
    path = Path(suite)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.exists():
            raise InputError(f"suite file {suite} does not exist")
        return load_probes([path])
    files = [p for p in library_files(SUITES_DIR) if p.stem == suite]
    if not files:
        raise InputError(f"unknown suite {suite!r}; valid suites: {', '.join(suite_names())}")
    return load_probes(files)
