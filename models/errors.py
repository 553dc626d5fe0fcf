"""The project's error types: every one means bad input and maps to exit code 2."""


class MmaprobeError(Exception):
    """Base of all input and usage errors (the CLI prints the message and exits 2)."""


class InputError(MmaprobeError, ValueError):
    """Malformed or inconsistent input data: files, rows, shapes, names."""
