"""Run the hostile corpus (cases.py) against the ``mmaprobe`` command line and classify.

Each case runs in a subprocess, in a fresh temporary directory holding its files, under a
wall-clock timeout and resource limits (address space, CPU time, file size), in its own
session (so that a timeout kills the whole process group).  Outcomes:

ok          the promise holds
hang        the wall-clock timeout or the CPU limit was hit
memory      MemoryError / "Unable to allocate" / killed by the address-space limit
traceback   stderr holds a Python traceback (or "Exception ignored", "Fatal Python error")
crash       killed by a signal the case does not allow (SIGSEGV, SIGABRT, ...)
silent      exit 0 where bad input had to be refused (a silent wrong answer)
exit        another wrong exit code
message     right exit code, but stderr does not name the file / line / field expected
            (on a failing exit), or lacks the note a case requires on exit 0
file        a file left where none may be (half-written, misplaced, written outside the
            chosen directory) or an input file modified
output      exit 0 but stdout is not the promised strict JSON
runner      the runner itself could not run the case (a corpus bug)

Usage (from the repository root, with mmaprobe installed)::

    python tests/hostile/runner.py [-j 2] [--class yaml] [--id 'output-*'] [--json FILE]

As a library: :func:`run_case` (used by test_hostile.py).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from cases import CASES, Case, Chmod, Dir, Fifo, Repeat, Symlink  # noqa: E402

AS_LIMIT = 2 << 30  # bytes of address space
DEFAULT_FSIZE = 256 << 20  # bytes per file
# root ignores file modes; without these capabilities it honours them (util-linux setpriv)
DROP_CAPS = ["/usr/bin/setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner",
             "--"]
OUTCOMES = ("ok", "hang", "memory", "traceback", "crash", "silent", "exit", "message", "file",
            "output", "runner")
MEMORY_MARKERS = ("MemoryError", "Unable to allocate", "std::bad_alloc", "Cannot allocate "
                  "memory", "out of memory")
TRACE_MARKERS = ("Traceback (most recent call last)", "Exception ignored",
                 "Fatal Python error")

# Sets the limits, optionally drops privileges, runs the command and reports its status and
# peak memory through a side file (the command is its child, in the same process group).
LAUNCHER = r"""
import json, os, resource, sys
with open(sys.argv[1]) as f:
    spec = json.load(f)
pid = os.fork()
if pid == 0:
    resource.setrlimit(resource.RLIMIT_AS, (spec["as"], spec["as"]))
    resource.setrlimit(resource.RLIMIT_CPU, (spec["cpu"], spec["cpu"] + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (spec["fsize"], spec["fsize"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    argv = [bytes.fromhex(a[4:]) if a.startswith("HEX:") else os.fsencode(a)
            for a in spec["argv"]]
    try:
        os.execv(argv[0], argv)
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
rc = os.waitstatus_to_exitcode(status)
with open(spec["side"], "w") as f:
    json.dump({"rc": rc, "maxrss_kb": ru.ru_maxrss, "cpu_s": ru.ru_utime + ru.ru_stime}, f)
os._exit(rc & 0xFF if rc >= 0 else 128 - rc)
"""


@dataclass
class Result:
    id: str
    cls: str
    argv: list[str]
    expected: list[int]
    rc: int | None
    outcome: str
    detail: str
    seconds: float
    maxrss_mb: float | None
    stderr_head: str
    stdout_head: str
    why: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def first_stderr_line(self) -> str:
        lines = [ln for ln in self.stderr_head.splitlines() if ln.strip()]
        if not lines:
            return ""
        if any(m in self.stderr_head for m in TRACE_MARKERS):
            # the last line of a traceback says what went wrong
            return lines[-1][:200]
        return lines[0][:200]


# -- command flags that the restructuring renames ----------------------------------------------

_FLAGS: dict[str, dict[str, str]] | None = None


def mmaprobe_cmd() -> list[str]:
    env = os.environ.get("MMAPROBE_HOSTILE_CMD")
    if env:
        return env.split()
    return [sys.executable, "-m", "mmaprobe.vectors"]


def flags(cmd: list[str]) -> dict[str, dict[str, str]]:
    """{CFG} / {CONS} for distinguish and synthesize, from their --help."""
    global _FLAGS
    if _FLAGS is None:
        def helptext(sub: str) -> str:
            r = subprocess.run(cmd + [sub, "--help"], capture_output=True, text=True,
                               timeout=60)
            return r.stdout
        d, s = helptext("distinguish"), helptext("synthesize")
        d_cons = "--constraints" if "--constraints" in d else "--config"
        d_cfg = "--config-file" if "--config-file" in d else "--config"
        s_cons = "--constraints" if "--constraints" in s else "--config"
        _FLAGS = {"distinguish": {"{CFG}": d_cfg, "{CONS}": d_cons},
                  "synthesize": {"{CONS}": s_cons}}
    return _FLAGS


def resolve(text: str, tmp: Path, sub: dict[str, str]) -> str:
    text = text.replace("{tmp}", str(tmp))
    for k, v in sub.items():
        text = text.replace(k, v)
    return text


# -- materialising a case ----------------------------------------------------------------------

def _write(path: Path, spec, tmp: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(spec, str):
        path.write_bytes(resolve(spec, tmp, {}).encode("utf-8", "surrogateescape"))
    elif isinstance(spec, bytes):
        path.write_bytes(spec)
    elif isinstance(spec, Repeat):
        with open(path, "wb") as f:
            def enc(x):
                return x if isinstance(x, bytes) else x.encode()
            f.write(enc(spec.head))
            body = enc(spec.body)
            chunk = body * max(1, (1 << 20) // max(1, len(body)))
            per = len(chunk) // len(body)
            left = spec.count
            while left > 0:
                n = min(per, left)
                f.write(chunk if n == per else body * n)
                left -= n
            f.write(enc(spec.tail))
    elif isinstance(spec, Dir):
        path.mkdir(exist_ok=True)
    elif isinstance(spec, Fifo):
        os.mkfifo(path)
    elif isinstance(spec, Symlink):
        os.symlink(resolve(spec.target, tmp, {}), path)
    elif isinstance(spec, Chmod):
        _write(path, spec.content, tmp)
    else:
        raise TypeError(f"unknown file spec {spec!r}")


def materialise(case: Case, tmp: Path) -> None:
    items = sorted(case.files.items(), key=lambda kv: (not isinstance(kv[1], Dir), kv[0]))
    for name, spec in items:
        _write(tmp / name, spec, tmp)
    for name, spec in case.files.items():
        if isinstance(spec, Chmod):
            os.chmod(tmp / name, spec.mode)
        elif isinstance(spec, Dir) and spec.mode is not None:
            os.chmod(tmp / name, spec.mode)


def snapshot(case: Case, tmp: Path) -> dict[str, bytes | None]:
    out = {}
    for name in case.unchanged:
        p = tmp / name
        try:
            out[name] = p.read_bytes()
        except OSError:
            out[name] = None
    return out


# -- running and classifying -------------------------------------------------------------------

class Capture:
    """Reads a pipe in a thread, keeping its first HEAD bytes and its last TAIL bytes (a
    case that prints gigabytes must not exhaust the runner); stop_after closes the pipe
    after that many bytes (the reader of `mmaprobe ... | head -c N`)."""

    HEAD = 1 << 20
    TAIL = 64 << 10

    def __init__(self, pipe, stop_after: int | None = None):
        self.pipe, self.stop_after = pipe, stop_after
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        fd = self.pipe.fileno()
        try:
            while True:
                want = 65536
                if self.stop_after is not None:
                    want = self.stop_after - self.total
                    if want <= 0:
                        break
                chunk = os.read(fd, want)
                if not chunk:
                    break
                self.total += len(chunk)
                room = self.HEAD - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                if chunk:
                    self.tail = (self.tail + chunk)[-self.TAIL:]
        except OSError:
            pass
        finally:
            self.pipe.close()

    def join(self) -> None:
        self.thread.join(timeout=10)

    def text(self) -> str:
        mid = b"" if not self.tail else (
            b"\n[... output cut ...]\n" if self.total > len(self.head) + len(self.tail)
            else b"")
        return (bytes(self.head) + mid + bytes(self.tail)).decode("utf-8", "replace")


def _argv_for_json(a) -> str:
    if isinstance(a, bytes):
        return "HEX:" + a.hex()
    return a


def run_case(case: Case, cmd: list[str] | None = None, workdir: Path | None = None,
             timeout_scale: float = 1.0, keep: bool = False) -> Result:
    cmd = cmd or mmaprobe_cmd()
    sub = flags(cmd).get(case.argv[0] if case.argv and isinstance(case.argv[0], str) else "",
                         {})
    base = Path(workdir or tempfile.gettempdir())
    scratch = Path(tempfile.mkdtemp(prefix="mmaprobe-hostile-", dir=base))
    os.chmod(scratch, 0o755)
    tmp = scratch / "case"
    tmp.mkdir()
    drop = case.nonroot and os.geteuid() == 0
    materialise(case, tmp)
    before = snapshot(case, tmp)
    argv = [resolve(a, tmp, sub) if isinstance(a, str) else a for a in case.argv]
    timeout = case.timeout * timeout_scale
    side = scratch / "status.json"
    spec = {"as": AS_LIMIT, "cpu": int(timeout) + 10, "fsize": case.fsize or DEFAULT_FSIZE,
            "side": str(side),
            "argv": [_argv_for_json(a) for a in (DROP_CAPS if drop else []) + cmd + argv]}
    env = dict(os.environ)
    env.update(case.env)
    spec_path = scratch / "spec.json"
    spec_path.write_text(json.dumps(spec))
    stdin_path = scratch / "stdin"
    stdin_path.write_bytes(case.stdin or b"")
    t0 = time.monotonic()
    timed_out = False
    with open(stdin_path, "rb") as stdin:
        # pipes, not files: the case's RLIMIT_FSIZE must not cut its own stderr
        p = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(spec_path)], cwd=tmp,
                             stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env, start_new_session=True)
        out_cap = Capture(p.stdout, stop_after=case.pipe_close)
        err_cap = Capture(p.stderr)
        try:
            p.wait(timeout=max(0.1, timeout - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        out_cap.join()
        err_cap.join()
    seconds = time.monotonic() - t0
    rc: int | None = None
    maxrss = None
    if side.exists():
        st = json.loads(side.read_text())
        rc, maxrss = st["rc"], st["maxrss_kb"] / 1024
    elif not timed_out:
        rc = p.returncode
    stderr = err_cap.text()
    stdout = out_cap.text()
    stdout_head = stdout[:4096]
    if len(stderr) > 4000:  # keep the start (the message) and the end (a traceback's cause)
        stderr = stderr[:2000] + "\n[...]\n" + stderr[-2000:]
    outcome, detail, notes = classify(case, tmp, rc, timed_out, stderr, stdout, before)
    res = Result(case.id, case.cls, [a if isinstance(a, str) else repr(a) for a in argv],
                 list(case.expected), rc, outcome, detail, round(seconds, 2),
                 None if maxrss is None else round(maxrss, 1), stderr, stdout_head[:2000],
                 case.why, notes)
    if not keep:
        _cleanup(scratch)
    return res


def _cleanup(path: Path) -> None:
    for root, dirs, _files in os.walk(path):
        for d in dirs:
            p = os.path.join(root, d)
            if not os.path.islink(p):
                try:
                    os.chmod(p, 0o755)
                except OSError:
                    pass
    shutil.rmtree(path, ignore_errors=True)


def _mentions(stderr: str, needle: str, tmp: Path) -> bool:
    needle = needle.replace("{tmp}", str(tmp))
    hay = stderr.lower()
    if needle.lower() in hay:
        return True
    # a file name may be shown with repr() escapes or in a shortened path
    return needle.encode("unicode_escape").decode().lower() in hay


def _names_line(stderr: str, line: int) -> bool:
    import re

    return re.search(rf"(:{line}\b|\bline {line}\b|\blines? {line}\b)", stderr) is not None


def classify(case: Case, tmp: Path, rc: int | None, timed_out: bool, stderr: str,
             stdout: str, before: dict) -> tuple[str, str, list[str]]:
    notes: list[str] = []
    if timed_out:
        return "hang", f"no exit within {case.timeout:g} s (killed)", notes
    if rc is None:
        return "crash", "no exit status", notes
    if any(m in stderr for m in MEMORY_MARKERS) or rc == -signal.SIGKILL:
        return "memory", f"rc {rc}; out of memory under the {AS_LIMIT >> 30} GiB limit", notes
    if rc == -signal.SIGXCPU:
        return "hang", "CPU-time limit exceeded", notes
    if any(m in stderr for m in TRACE_MARKERS):
        return "traceback", f"rc {rc}; Python traceback on stderr", notes
    if rc not in case.expected:
        if rc < 0:
            return "crash", f"killed by signal {-rc}", notes
        if rc == 0 and 2 in case.expected:
            return "silent", "exit 0 on input that had to be refused", notes
        return "exit", f"exit {rc}, expected {'/'.join(map(str, case.expected))}", notes
    said = stderr if case.stream == "stderr" else stderr + "\n" + stdout
    if rc != 0:
        if rc == 2 and not said.strip():
            return "message", f"exit {rc} with nothing on {case.stream}", notes
        missing = [m for m in case.mentions if not _mentions(said, m, tmp)]
        if missing:
            return "message", f"{case.stream} does not mention " + ", ".join(
                repr(m) for m in missing), notes
    else:
        missing = [m for m in case.note if not _mentions(said, m, tmp)]
        if missing:
            return "message", "exit 0 without the note on stderr naming " + ", ".join(
                repr(m) for m in missing), notes
    if case.line is not None and rc != 0:
        want = case.line if isinstance(case.line, tuple) else (case.line,)
        if not any(_names_line(stderr, n) for n in want):
            return "message", f"stderr does not name line {' or '.join(map(str, want))}", notes
    for name in case.no_file:
        p = Path(name.replace("{tmp}", str(tmp)))
        p = p if p.is_absolute() else tmp / p
        if os.path.lexists(p):
            return "file", f"{name} exists after the run", notes
    for name, content in before.items():
        try:
            now = (tmp / name).read_bytes()
        except OSError:
            now = None
        if now != content:
            return "file", f"{name} was modified or removed", notes
    if case.json_stdout and rc == 0:
        def reject(x):
            raise ValueError(f"non-JSON constant {x}")
        try:
            json.loads(stdout, parse_constant=reject)
        except ValueError as e:
            return "output", f"stdout is not strict JSON: {e}", notes
    return "ok", "", notes


# -- reporting ---------------------------------------------------------------------------------

def select(classes: list[str] | None, ids: list[str] | None) -> list[Case]:
    out = []
    for c in CASES:
        if classes and c.cls not in classes:
            continue
        if ids and not any(fnmatch.fnmatch(c.id, pat) for pat in ids):
            continue
        out.append(c)
    return out


def table(results: list[Result]) -> str:
    classes = sorted({r.cls for r in results})
    used = [o for o in OUTCOMES if any(r.outcome == o for r in results)]
    head = f"{'class':9s} {'cases':>5s} " + " ".join(f"{o:>9s}" for o in used)
    lines = [head, "-" * len(head)]
    for cl in classes + ["TOTAL"]:
        rs = [r for r in results if cl == "TOTAL" or r.cls == cl]
        lines.append(f"{cl:9s} {len(rs):5d} " + " ".join(
            f"{sum(r.outcome == o for r in rs):9d}" for o in used))
    return "\n".join(lines)


COMMANDS = ("presets", "eval", "validate", "gemm", "bench", "probes", "check", "authenticate",
            "distinguish", "synthesize", "suite", "run", "infer", "identify")


def _first_line(r: dict) -> str:
    err = r.get("stderr_head") or ""
    lines = [ln.strip() for ln in err.splitlines() if ln.strip() and ln.strip() != "[...]"]
    if not lines:
        out = (r.get("stdout_head") or "").strip().splitlines()
        return ("(stderr empty; stdout: " + out[0][:120] + ")") if out else "(no output)"
    if any(m in err for m in TRACE_MARKERS):
        import re

        exc = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception|Exit|Interrupt)\b", ln)]
        pick = exc[-1] if exc else lines[-1]
        first = lines[0]
        if not first.startswith(("Traceback", "Exception ignored")) and first != pick:
            pick = first + " ... " + pick  # progress line before the traceback, then cause
    else:
        errs = [ln for ln in lines if "error" in ln.lower()]
        pick = errs[0] if errs else lines[0]
    return pick[:220]


def markdown(report: dict) -> str:
    """The baseline: counts per class and per outcome, and every failing case."""
    res = report["results"]
    used = [o for o in OUTCOMES if any(r["outcome"] == o for r in res)]
    out = ["| class | cases | " + " | ".join(used) + " |",
           "|---|---:|" + "---:|" * len(used)]
    for cl in sorted({r["cls"] for r in res}) + ["**total**"]:
        rs = [r for r in res if cl == "**total**" or r["cls"] == cl]
        out.append(f"| {cl} | {len(rs)} | " + " | ".join(
            str(sum(r["outcome"] == o for r in rs)) for o in used) + " |")
    by_cmd = ["| command | cases | failing | " + " | ".join(u for u in used if u != "ok")
              + " |", "|---|---:|---:|" + "---:|" * (len(used) - 1)]
    for cmd in COMMANDS:
        rs = [r for r in res if r["argv"] and r["argv"][0] == cmd]
        by_cmd.append(f"| {cmd} | {len(rs)} | {sum(r['outcome'] != 'ok' for r in rs)} | "
                      + " | ".join(str(sum(r["outcome"] == o for r in rs))
                                   for o in used if o != "ok") + " |")
    fail = ["Each line: case id, outcome (exit code), the first line of stderr (for a "
            "traceback: the line before it and the exception).", ""]
    for cl in sorted({r["cls"] for r in res}):
        rs = [r for r in res if r["cls"] == cl and r["outcome"] != "ok"]
        if not rs:
            continue
        fail.append(f"### {cl} ({len(rs)} failing)")
        fail.append("")
        for r in sorted(rs, key=lambda r: (OUTCOMES.index(r["outcome"]), r["id"])):
            line = _first_line(r).replace("`", "'")
            rc = "killed" if r["rc"] is None else r["rc"]
            fail.append(f"- `{r['id']}` **{r['outcome']}** (exit {rc}; expected "
                        f"{'/'.join(map(str, r['expected']))}): `{line}`")
        fail.append("")
    return ("## Counts per class and outcome\n\n" + "\n".join(out)
            + "\n\n## Counts per command\n\n" + "\n".join(by_cmd)
            + "\n\n## Failing cases\n\n" + "\n".join(fail))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-j", "--jobs", type=int, default=1, help="cases run in parallel")
    ap.add_argument("--class", dest="classes", action="append", help="only this class "
                                                                     "(repeatable)")
    ap.add_argument("--id", dest="ids", action="append", help="only ids matching this glob "
                                                               "(repeatable)")
    ap.add_argument("--json", default="hostile-report.json", help="report file to write")
    ap.add_argument("--list", action="store_true", help="list the selected cases and stop")
    ap.add_argument("--timeout-scale", type=float, default=1.0)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    ap.add_argument("--markdown", metavar="FILE", help="also write the tables and the "
                                                      "failing cases as Markdown")
    ap.add_argument("--from-json", metavar="FILE", help="do not run: write --markdown from "
                                                        "an earlier JSON report")
    args = ap.parse_args(argv)
    if args.from_json:
        if not args.markdown:
            ap.error("--from-json needs --markdown")
        Path(args.markdown).write_text(markdown(json.loads(Path(args.from_json).read_text())))
        return 0
    if args.jobs < 1:
        ap.error("-j must be at least 1")
    cases = select(args.classes, args.ids)
    if args.list:
        for c in cases:
            print(f"{c.id:60s} {c.cls:9s} expect {'/'.join(map(str, c.expected))}")
        print(f"{len(cases)} cases")
        return 0
    if not cases:
        print("no case selected", file=sys.stderr)
        return 2
    cmd = mmaprobe_cmd()
    flags(cmd)
    t0 = time.monotonic()
    results: list[Result] = []

    def one(c: Case) -> Result:
        try:
            r = run_case(c, cmd, timeout_scale=args.timeout_scale, keep=args.keep)
        except Exception as e:  # a case the runner cannot run is reported, not fatal
            r = Result(c.id, c.cls, [str(a) for a in c.argv], list(c.expected), None,
                       "runner", f"{type(e).__name__}: {e}", 0.0, None, "", "", c.why)
        if args.verbose:
            print(f"{r.outcome:9s} {r.seconds:6.1f}s rc={r.rc!s:4s} {r.id}  {r.detail}",
                  flush=True)
        else:
            print("." if r.outcome == "ok" else r.outcome[0].upper(), end="", flush=True)
        return r

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(one, cases))
    if not args.verbose:
        print()
    wall = time.monotonic() - t0
    print(table(results))
    bad = [r for r in results if r.outcome != "ok"]
    print(f"{len(results)} cases, {len(bad)} failing, {wall:.0f} s wall")
    report = {"cases": len(results), "failing": len(bad), "wall_s": round(wall, 1),
              "command": cmd, "flags": _FLAGS, "results": [asdict(r) for r in results]}
    Path(args.json).write_text(json.dumps(report, indent=1, ensure_ascii=False))
    print(f"report: {args.json}")
    if args.markdown:
        Path(args.markdown).write_text(markdown(report))
        print(f"markdown: {args.markdown}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
