"""The steady-state trace (``make house``): which cronctl modules run code while fires repeat.

A real ``cronctl run`` on SQLite with two jobs firing every second: a command
(``/bin/true``) and a Python target with the default isolation (a worker process a
fire). Once the scheduler logs READY the trace is switched on for :data:`SECONDS`
seconds, then off; the modules start-up ran are not counted unless steady state runs
them again.

How the trace sees everything: the run uses an interpreter of its own, a throw-away
virtual environment whose ``site-packages`` chains to this one's and holds a ``.pth``
line importing :data:`TRACER`. So every Python process of the run loads it: the
scheduler, and the children it starts with ``sys.executable -I`` (``-I`` ignores
``PYTHONPATH`` and ``sitecustomize`` on it, not ``site-packages``): the Python job's
worker and the commands' supervisor. The tracer sets a profile function on every thread
(``sys.setprofile`` here, ``threading.setprofile`` for the threads started later: the
interpreter is 3.11, without ``sys.monitoring`` or ``setprofile_all_threads``) that does
nothing until a file ``arm`` appears (a thread of the tracer looks every 20 ms; a
process started later looks at once), and nothing again after ``stop``. While armed it
notes the file of every frame that runs bytecode: one entered or resumed (``call``),
one calling C (``c_*``), and one returned to (``return``: the caller; a loop entered
before READY, such as a thread's ``run``, shows only so: such modules are marked).
Each process appends the new files under ``cronctl/`` to a file of its own at once, so
a child that ends with ``os._exit`` loses nothing; a fork (a ``preexec_fn``) keeps the
profile and gets a poller of its own.

Output: the modules per process kind (the scheduler, the job's worker, the supervisor),
their union, per package (``runtime/``, ``store/``, ``dispatch/``, ...), and the list.
``python -m bench.house [SECONDS] [--isolation=process|thread] [--json]``: the Python job
says no ``isolation`` unless told (the configured default applies); ``--json`` prints
the result as JSON too.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench._support import TREE, print_table, tree_env

SECONDS = 10.0
READY_MARKER = " ready node="
READY_TIMEOUT = 120.0

TRACER = r'''
import json, os, sys, threading, time

_DIR = {folder!r}
_PKG = {package!r}
_ARM = os.path.join(_DIR, "arm")
_STOP = os.path.join(_DIR, "stop")
_armed = os.path.exists(_ARM) and not os.path.exists(_STOP)
_entered = set()  # files of frames entered or resumed (call) or calling C (c_*)
_resumed = set()  # files of frames returned to
_lock = threading.Lock()
_out = None
_pid = None


def _open():
    global _out, _pid
    if _pid != os.getpid():
        _pid = os.getpid()
        _out = open(os.path.join(_DIR, "seen-%d.txt" % _pid), "a", buffering=1)
        _out.write("#argv " + json.dumps(sys.argv) + "\n")


def _note(path, code, how):
    with _lock:
        _open()
        _out.write("%s\t%s\t%s\t%s\n" % (path, code.co_name,
                                         threading.current_thread().name, how))


def _profile(frame, event, arg):
    if not _armed:
        return
    if event == "return":  # the caller runs on: noted as resumed, unless entered too
        frame = frame.f_back
        if frame is None:
            return
        path = frame.f_code.co_filename
        if path not in _resumed:
            _resumed.add(path)
            if path.startswith(_PKG) and path not in _entered:
                _note(path, frame.f_code, "resumed")
        return
    path = frame.f_code.co_filename
    if path not in _entered:
        _entered.add(path)
        _resumed.add(path)
        if path.startswith(_PKG):
            _note(path, frame.f_code, "entered")


def _poll():
    global _armed
    while not os.path.exists(_STOP):
        if not _armed and os.path.exists(_ARM):
            _armed = True
        time.sleep(0.02)
    _armed = False


def _start_poller():
    threading.Thread(target=_poll, name="house-trace", daemon=True).start()


_start_poller()  # before the profile is set: the poller itself is not traced
os.register_at_fork(after_in_child=_start_poller)
threading.setprofile(_profile)
sys.setprofile(_profile)
if _armed:  # a process started while traced: counted even if it runs no cronctl code
    _open()  # (sys.argv is ["-m", ARGS...] or ["-c", ARGS...] this early)
'''

PROBE = '''
def tick(ctx):
    return None
'''


def _interpreter(root: Path, control: Path) -> Path:
    """A virtual environment under ``root`` that sees this one's packages and loads the
    tracer in every process; its ``python``."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip())
    ours = sysconfig.get_paths()["purelib"]
    (site / "_cronctl_house_trace.py").write_text(TRACER.format(
        folder=str(control), package=str(TREE / "cronctl") + os.sep))
    # addsitedir, not a bare path: it runs the .pth files there too (the editable
    # install of cronctl is one).
    (site / "_cronctl_house.pth").write_text(
        f"import site; site.addsitedir({ours!r})\nimport _cronctl_house_trace\n")
    return python


def _configure(folder: Path, isolation: str | None) -> None:
    (folder / "jobs.d").mkdir(parents=True)
    (folder / "house_probe.py").write_text(PROBE)
    chosen = f'isolation = "{isolation}"\n' if isolation else ""
    (folder / "jobs.d" / "house.toml").write_text(
        '[jobs.command]\ncron = "* * * * * *"\ncommand = ["/bin/true"]\n\n'
        '[jobs.python]\ncron = "* * * * * *"\ntarget = "python:house_probe:tick"\n'
        + chosen)
    (folder / "cronctl.toml").write_text(
        '[scheduler]\ndatabase = "sqlite:///state.db"\njobs_dir = "jobs.d"\n'
        'node_id = "house"\nshutdown_timeout = "5s"\n')


def _wait_ready(proc: subprocess.Popen[bytes], log: Path) -> float:
    started = time.monotonic()
    while time.monotonic() - started < READY_TIMEOUT:
        if proc.poll() is not None:
            raise SystemExit(f"cronctl run exited {proc.returncode} before READY:\n"
                             f"{log.read_text(errors='replace')[-2000:]}")
        if READY_MARKER in log.read_text(errors="replace"):
            return time.monotonic() - started
        time.sleep(0.05)
    raise SystemExit(f"cronctl run not READY after {READY_TIMEOUT:g} s")


def _kind(argv: list[str], pid: int, scheduler: int, scheduler_argv: list[str]) -> str:
    if pid == scheduler:
        return "scheduler"
    first = argv[0] if argv else ""
    if argv == scheduler_argv:  # forked, not exec-ed: a subprocess's preexec_fn
        return "fork (preexec_fn)"
    if first == "-m" or first.endswith(os.path.join("dispatch", "worker.py")):
        return "worker (python -m)"
    if first == "-c":
        return "supervisor (python -c)"
    return f"other ({' '.join(argv)[:60]})"


def _read_seen(control: Path, scheduler: int) -> dict[str, Any]:
    """Module (path under cronctl/) -> the process kinds that ran it, a function seen,
    whether a frame of it was entered (else only returned to) while traced."""
    prefix = str(TREE / "cronctl") + os.sep
    files = {int(f.stem.split("-")[1]): f.read_text().splitlines()
             for f in sorted(control.glob("seen-*.txt"))}
    argv_of = {pid: json.loads(lines[0].removeprefix("#argv ")) if lines else []
               for pid, lines in files.items()}
    modules: dict[str, dict[str, Any]] = {}
    processes: Counter[str] = Counter()
    threads: set[str] = set()
    for pid, lines in files.items():
        kind = _kind(argv_of[pid], pid, scheduler, argv_of.get(scheduler, []))
        processes[kind] += 1
        for line in lines[1:]:
            path, function, thread, how = line.split("\t")
            threads.add(f"{kind.split(' ')[0]}:{thread}")
            entry = modules.setdefault(path.removeprefix(prefix), {
                "kinds": set(), "example": f"{function} ({thread})", "entered": False})
            entry["kinds"].add(kind)
            entry["entered"] = entry["entered"] or how == "entered"
    return {"modules": modules, "processes": dict(processes), "threads": sorted(threads)}


def _package(module: str) -> str:
    head, sep, _ = module.partition("/")
    return f"{head}/" if sep else "(top level)"


def _executions(db: Path) -> Counter[str]:
    """Executions recorded so far, per job (read beside the running scheduler)."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return Counter()
    try:
        return Counter(dict(conn.execute(
            "SELECT job_id, count(*) FROM job_executions GROUP BY job_id").fetchall()))
    except sqlite3.Error:
        return Counter()
    finally:
        conn.close()


def trace(seconds: float = SECONDS, isolation: str | None = None) -> dict[str, Any]:
    """The trace of one run; ``isolation`` the Python job's (None: it says nothing, the
    default applies)."""
    with tempfile.TemporaryDirectory(prefix="cronctl-house-") as tmp:
        root = Path(tmp)
        control, folder = root / "trace", root / "run"
        control.mkdir()
        python = _interpreter(root, control)
        _configure(folder, isolation)
        env = tree_env(folder)
        subprocess.run([str(python), "-m", "cronctl", "-c", "cronctl.toml", "db", "upgrade"],
                       cwd=folder, env=env, check=True, capture_output=True)
        log = folder / "run.log"
        with log.open("wb") as out:
            proc = subprocess.Popen([str(python), "-m", "cronctl", "-c", "cronctl.toml", "run"],
                                    cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        try:
            ready = _wait_ready(proc, log)
            armed_at, before = time.time(), _executions(folder / "state.db")
            (control / "arm").touch()
            time.sleep(seconds)
            (control / "stop").touch()
            stopped_at, after = time.time(), _executions(folder / "state.db")
            time.sleep(0.5)  # every poller sees `stop` before the shutdown runs
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        seen = _read_seen(control, proc.pid)
    return {"ready_s": ready, "traced_s": stopped_at - armed_at, "isolation": isolation,
            "fires_traced": dict(after - before), **seen}


def report(result: dict[str, Any]) -> None:
    modules: dict[str, dict[str, Any]] = result["modules"]
    isolation = result["isolation"] or "default"
    print(f"steady-state trace: cronctl run on SQLite, one command job and one Python job "
          f"(isolation {isolation}) every second; READY after {result['ready_s']:.1f} s "
          f"(traced interpreter), traced {result['traced_s']:.1f} s after READY")
    print("  processes that ran cronctl code while traced: " + ", ".join(
        f"{kind} x{n}" for kind, n in sorted(result["processes"].items())))
    print("  threads: " + ", ".join(result["threads"]))
    fires = result["fires_traced"]
    print("  executions recorded while traced: " + (", ".join(
        f"{job} {n}" for job, n in sorted(fires.items())) or "none read"))
    kinds = sorted({k for m in modules.values() for k in m["kinds"]})
    columns = ["all", *kinds, "all, entered"]
    counts: dict[str, Counter[str]] = {c: Counter() for c in columns}
    for module, entry in modules.items():
        package = _package(module)
        counts["all"][package] += 1
        if entry["entered"]:
            counts["all, entered"][package] += 1
        for kind in entry["kinds"]:
            counts[kind][package] += 1
    packages = sorted(counts["all"], key=lambda p: (-counts["all"][p], p))
    rows = [[p, *(str(counts[c][p] or "") for c in columns)] for p in packages]
    rows.append(["modules", *(str(sum(counts[c].values())) for c in columns)])
    print_table(["package", *columns], rows)
    print("  (all, entered: without the modules only returned to, i.e. whose frame was "
          "running before the trace began: a loop's)")
    print("modules (process kinds; the first function seen, and its thread; * only "
          "returned to):")
    for module in sorted(modules):
        entry = modules[module]
        short = ", ".join(sorted(k.split(" ")[0] for k in entry["kinds"]))
        mark = " " if entry["entered"] else "*"
        print(f"  {mark} {module:38} {short:26} {entry['example']}")


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    isolation = next((a.partition("=")[2] for a in args if a.startswith("--isolation=")),
                     None)
    numbers = [a for a in args if not a.startswith("--")]
    result = trace(float(numbers[0]) if numbers else SECONDS, isolation)
    report(result)
    if as_json:
        print(json.dumps({**result, "modules": {
            m: {**e, "kinds": sorted(e["kinds"])} for m, e in result["modules"].items()}},
            indent=1))


if __name__ == "__main__":
    main()
