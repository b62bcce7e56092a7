"""A fork server for the jobs of one local run.

A simulation job spends about 0.2 CPU-s importing numpy, h5py and the project before its first
trial, an aggregation or figure job about 1 CPU-s importing pandas and matplotlib; a forked copy
of a process that has made those imports starts in milliseconds. The server then freezes its
heap (`gc.freeze`): a child's garbage collections pass over the child's own objects only, which
takes a sixth off a job that keeps many objects (zCDP-Episodic's 10,000 ledger entries a trial). The
workflow's `onstart` hook starts one server per local run (`start`) with the job scripts it
serves, and names its socket in `DPBANDITS_FORKSERVER`. A job's script then hands the server its
file's path, its arguments (or its pickled `snakemake` object), working directory, environment
and standard streams (`delegate`); the server runs the script's `main` in a forked child and
answers with the child's exit status. A job that finds no server or cannot reach it, or that the
server declines (another workflow's script, a request it cannot use, a failed fork), runs `main`
itself (`run` does either): the same function on the same arguments, so the same output.

The server runs one child per job and kills the child when its job's process goes away (the
connection closes), so stopping a job stops its work. It exits on SIGTERM (`Server.stop`) or when
the process that started it is gone. Stdlib only: a job imports this before anything else.
"""

from __future__ import annotations

import _socket  # not `socket`, whose import (enum, selectors) would double a client's own
import marshal
import os
import struct
import sys

TYPE_CHECKING = False  # typing's own constant costs a job's client an import
if TYPE_CHECKING:  # the rest is imported where the server needs it: a job's client stays light
    import selectors
    import socket
    import subprocess
    from collections.abc import Callable
    from pathlib import Path
    from types import ModuleType
    from typing import Any, NoReturn

ENV = "DPBANDITS_FORKSERVER"
"""Environment variable naming the socket of the run's server."""
SINGLE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                 "GOTO_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
"""Thread-count variables pinned to 1 in the server: BLAS reads them once, at import, and the
jobs it serves are one-thread jobs."""
_LENGTH = struct.Struct("!Q")
_STATUS = struct.Struct("!i")
MAX_FOLDER = 80
"""Longest temporary folder the socket goes in: a socket's path has at most 107 bytes."""
NOT_SERVED = -1
"""The status the server answers for a job it does not run: the job runs its script itself."""


def delegate(script: str, argv: list[str] | None = None, snakemake: object = None
             ) -> int | None:
    """Run this job's `script` (the path of its file in the workflow) in the run's server with
    `argv` or the job's `snakemake` object: its exit status, or None where the server does not
    run it (the server serves the files it was started with, not another workflow's)."""
    path = os.environ.get(ENV)
    if not path:
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    try:
        # marshal: the server runs the same interpreter (the workflow's sys.executable)
        request = {"script": os.path.realpath(script), "argv": argv or [], "cwd": os.getcwd(),
                   "env": dict(os.environ)}
        if snakemake is not None:
            import pickle

            request["snakemake"] = pickle.dumps(snakemake)
        payload = marshal.dumps(request)
        # the job's standard streams, as `socket.send_fds` sends them
        streams = (_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("3i", 0, 1, 2))
        sock.sendmsg([_LENGTH.pack(len(payload))], [streams])
        sock.sendall(payload)
        status = _receive(sock, _STATUS.size)
    finally:
        sock.close()
    if status is None:
        sys.stderr.write(f"dpbandits: error: the fork server at {path} exited before the job "
                         "finished; rerun the same command\n")
        return 1
    code = _STATUS.unpack(status)[0]
    return None if code == NOT_SERVED else code


def run(script: str, main: Callable[[Any], int], argv: list[str] | None = None,
        snakemake: object = None) -> NoReturn:
    """Exit with the job's status: `main` run by the run's server where it serves `script`
    (`delegate`), else here, on `argv` or the job's `snakemake` object."""
    status = delegate(script, argv, snakemake)
    sys.exit(main(argv if snakemake is None else snakemake) if status is None else status)


def _receive(sock: socket.socket | _socket.socket, size: int) -> bytes | None:
    """Exactly `size` bytes, or None if the peer closes first."""
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


class Server:
    """A running server process (from `start`)."""

    def __init__(self, process: subprocess.Popen[bytes], socket_path: str) -> None:
        self.process, self.socket_path = process, socket_path

    def stop(self, timeout: float = 30.0) -> int:
        """Ask the server to exit and wait for it (its CPU time then counts as the caller's
        children's); returns its exit status."""
        import subprocess

        if self.process.poll() is None:
            self.process.terminate()
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def start(scripts: list[str], log: str | Path) -> Server:
    """Start a server for `scripts` (files defining `main(argv or snakemake) -> int` and
    optionally `preload()`), logging to `log`; it accepts jobs once their imports are done."""
    import subprocess
    import tempfile
    from pathlib import Path

    # mode 0700: only this user reaches the socket; /tmp where TMPDIR is too long for one
    base = tempfile.gettempdir() if len(tempfile.gettempdir()) <= MAX_FOLDER else "/tmp"
    folder = tempfile.mkdtemp(prefix="dpb-fork-", dir=base)
    socket_path = os.path.join(folder, "socket")
    env = {**os.environ, **dict.fromkeys(SINGLE_THREAD, "1")}
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:  # -P: the server's imports do not see the working directory
        process = subprocess.Popen(
            [sys.executable, "-P", "-m", "dpbandits.forkserver", socket_path,
             str(os.getpid()), *map(str, scripts)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env, start_new_session=True,
        )
    return Server(process, socket_path)


def load_script(script: str | Path) -> ModuleType:
    """The job script as a module (not as __main__, so that it does not run itself)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(f"dpbandits_job_{Path(script).stem}", script)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load job script {script}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def serve(socket_path: str, parent: int, scripts: list[str]) -> None:
    """Accept jobs on `socket_path` and run each in a forked child until told to stop or until
    the process `parent` that started the server is gone; remove the socket's folder on exit."""
    import gc
    import selectors
    import shutil
    import signal
    import socket
    import time
    from pathlib import Path

    def stop_now(*_: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop_now)  # while loading the scripts: stop at once
    signal.signal(signal.SIGINT, stop_now)
    print(f"fork server {os.getpid()} loading {len(scripts)} script(s)", flush=True)
    jobs: dict[int, socket.socket] = {}
    selector = selectors.DefaultSelector()
    try:
        modules = {os.path.realpath(script): load_script(script) for script in scripts}
        for module in modules.values():
            if hasattr(module, "preload"):
                module.preload()
        gc.collect()  # what the imports left behind, before the children share the heap
        gc.freeze()  # the children's collections skip the loaded heap and leave its pages shared
        wake_read, wake_write = socket.socketpair()
        wake_read.setblocking(False)
        wake_write.setblocking(False)
        signal.set_wakeup_fd(wake_write.fileno(), warn_on_full_buffer=False)
        stopping: list[bool] = []
        signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake the selector
        signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
        signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(socket_path)
        listener.listen(64)
        selector.register(listener, selectors.EVENT_READ)
        selector.register(wake_read, selectors.EVENT_READ)
        names = ", ".join(Path(script).stem for script in modules)
        print(f"fork server {os.getpid()} serving {names} on {socket_path}", flush=True)
        while not stopping and os.getppid() == parent:
            for key, _ in selector.select(timeout=1.0):
                if key.fileobj is listener:
                    try:
                        conn, _ = listener.accept()
                    except OSError as exc:  # e.g. out of file descriptors: the job waits
                        print(f"accept failed: {exc}", flush=True)
                        time.sleep(0.1)
                        continue
                    pid = _fork_job(conn, modules, [listener, wake_read, wake_write, selector,
                                                    *jobs.values()])
                    if pid is not None:
                        jobs[pid] = conn
                        selector.register(conn, selectors.EVENT_READ, pid)
                elif key.fileobj is wake_read:
                    while _drain(wake_read):
                        pass
                else:  # the job's process closed its end: stop its work
                    _kill(key.data)
                    selector.unregister(key.fileobj)
            _reap(jobs, selector)
    finally:
        for pid in list(jobs):
            _kill(pid)
        while jobs:
            _reap(jobs, selector, block=True)
        shutil.rmtree(os.path.dirname(socket_path), ignore_errors=True)
        print("fork server stopped", flush=True)


def _drain(sock: socket.socket) -> bool:
    try:
        return bool(sock.recv(4096))
    except BlockingIOError:
        return False


def _kill(pid: int) -> None:
    import signal

    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _reap(jobs: dict[int, socket.socket], selector: selectors.BaseSelector,
          block: bool = False) -> None:
    """Collect finished children and send each its job's exit status (128 + signal if killed,
    as a shell reports it); the log gets the status and the child's CPU seconds."""
    while jobs:
        pid, wait_status, usage = os.wait4(-1, 0 if block else os.WNOHANG)
        if pid == 0:
            return
        conn = jobs.pop(pid, None)
        if conn is None:
            continue
        code = os.waitstatus_to_exitcode(wait_status)
        code = 128 - code if code < 0 else code
        print(f"job {pid}: exit {code}, {usage.ru_utime + usage.ru_stime:.2f} CPU-s", flush=True)
        try:
            selector.unregister(conn)
        except KeyError:
            pass
        try:
            conn.sendall(_STATUS.pack(code))
        except OSError:
            pass
        conn.close()


def _fork_job(conn: socket.socket, modules: dict[str, ModuleType], inherited: list
              ) -> int | None:
    """Read one request and fork its child: the child's pid, or None where the job is to run
    itself (a malformed request, a script not served here, a failed fork), which the job is
    told."""
    import signal
    import socket

    fds: list[int] = []
    try:
        conn.settimeout(30.0)
        header, fds, _, _ = socket.recv_fds(conn, _LENGTH.size, 3)
        if len(header) != _LENGTH.size or len(fds) != 3:
            raise ValueError("malformed request header")
        payload = _receive(conn, _LENGTH.unpack(header)[0])
        if payload is None:
            raise ValueError("request cut short")
        request = marshal.loads(payload)
        module = modules.get(request["script"])
        if module is None:
            raise LookupError(f"{request['script']} is not served here")
        conn.settimeout(None)
        pid = os.fork()
    except Exception as exc:  # noqa: BLE001 - one bad request must not stop the others' jobs
        print(f"a job runs itself: {type(exc).__name__}: {exc}", flush=True)
        for fd in fds:
            os.close(fd)
        try:
            conn.sendall(_STATUS.pack(NOT_SERVED))
        except OSError:
            pass
        conn.close()
        return None
    if pid:
        for fd in fds:
            os.close(fd)
        print(f"job {pid}: {os.path.basename(request['script'])[:-3]}", flush=True)
        return pid
    code = 1
    try:  # the child: the job's streams, directory and environment, then the script's main
        signal.set_wakeup_fd(-1)
        for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
            signal.signal(number, signal.SIG_DFL)
        for item in (*inherited, conn):
            item.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [module.__file__ or "", *request["argv"]]
        code = _run_main(module, request)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


def _run_main(module: ModuleType, request: dict) -> int:
    """`main(argv)`, or `main(snakemake)` for a Snakemake script job, with what Python does at a
    script's end: an uncaught exception goes to sys.excepthook and exits 1; SystemExit exits
    with its code; then the exit handlers run (`atexit`: what the job registered and what
    its modules' imports did, as in a process of its own)."""
    try:
        if "snakemake" in request:
            import pickle

            return int(module.main(pickle.loads(request["snakemake"])) or 0)
        return int(module.main(request["argv"]) or 0)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        sys.stderr.write(f"{exc.code}\n")
        return 1
    except BaseException:  # noqa: BLE001 - reported as Python reports an uncaught exception
        sys.excepthook(*sys.exc_info())
        return 1
    finally:
        import atexit

        atexit._run_exitfuncs()  # logging's shutdown among them, once logging is imported


if __name__ == "__main__":
    import traceback

    try:
        serve(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
    except Exception:  # noqa: BLE001 - the server's log gets the traceback; jobs run alone
        traceback.print_exc()
        sys.exit(1)
