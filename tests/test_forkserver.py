"""The fork server runs a job's `main` in a forked child with the job's streams, directory and
environment, reports its exit status, stops its work when the job goes away, and gives a shard
the same bits as a job that runs alone."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from shard_compare import shard_digest

from dpbandits import forkserver

REPO = Path(__file__).resolve().parents[1]
SIMULATE = REPO / "workflow" / "scripts" / "simulate.py"
CLIENT = ("import sys\nfrom dpbandits.forkserver import delegate\n"  # argv: script, arguments
          "status = delegate(sys.argv[1], sys.argv[2:])\n"
          "sys.exit(99 if status is None else status)")

TOY = '''
import gc, os, sys, time

def preload():
    time.sleep(float(os.environ.get("TOY_PRELOAD_SECONDS", "0")))

def main(argv):
    if isinstance(argv, dict):  # a job object, as Snakemake's script jobs send
        print(sorted(argv.items()), flush=True)
        return 0
    if argv[0] == "echo":
        print("out", os.getcwd(), os.environ.get("TOY_VALUE"), flush=True)
        sys.stderr.write("err\\n")
        return int(argv[1])
    if argv[0] == "atexit":  # an exit handler the job registers writes its file
        import atexit
        atexit.register(lambda: open(argv[1], "w").write("exit handlers ran"))
        return 0
    if argv[0] == "frozen":
        print(gc.get_freeze_count() > 0, flush=True)
        return 0
    if argv[0] == "raise":
        raise RuntimeError("toy failure")
    if argv[0] == "exit":
        sys.exit("toy exit message")
    if argv[0] == "sleep":
        with open(argv[1], "w") as handle:
            handle.write(str(os.getpid()))
        time.sleep(60)
    return 0
'''


def wait_for(condition, timeout: float = 30.0) -> bool:
    """Poll `condition` until it holds or `timeout` seconds pass."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.02)
    return False


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def start_server(script: Path, log: Path) -> forkserver.Server:
    server = forkserver.start([str(script)], log)
    assert wait_for(lambda: os.path.exists(server.socket_path)), log.read_text()
    server.script = script  # type: ignore[attr-defined]  # what the tests' clients name
    return server


@pytest.fixture
def toy_server(tmp_path: Path):
    script = tmp_path / "toy.py"
    script.write_text(TOY)
    server = start_server(script, tmp_path / "server.log")
    yield server
    server.stop()


def client(server: forkserver.Server | None, *argv: str, cwd: Path, **extra: str
           ) -> subprocess.Popen:
    env = {**os.environ, **extra}
    env.pop(forkserver.ENV, None)
    if server is not None:
        env[forkserver.ENV] = server.socket_path
    script = str(server.script) if server is not None else "toy.py"
    return subprocess.Popen([sys.executable, "-c", CLIENT, script, *argv], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_job_runs_with_its_own_streams_directory_environment_and_exit_status(toy_server,
                                                                              tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    proc = client(toy_server, "echo", "3", cwd=work, TOY_VALUE="seen")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3
    assert out == f"out {work} seen\n" and err == "err\n"


def test_an_uncaught_exception_or_exit_message_fails_the_job_as_python_would(toy_server,
                                                                              tmp_path):
    proc = client(toy_server, "raise", cwd=tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and err.rstrip().endswith("RuntimeError: toy failure")
    proc = client(toy_server, "exit", cwd=tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and err == "toy exit message\n"


def test_a_job_object_is_sent_pickled_and_given_to_main(toy_server, tmp_path, capfd,
                                                         monkeypatch):
    monkeypatch.setenv(forkserver.ENV, toy_server.socket_path)
    assert forkserver.delegate(str(toy_server.script),
                               snakemake={"input": ["a.h5"], "threads": 1}) == 0
    assert capfd.readouterr().out == "[('input', ['a.h5']), ('threads', 1)]\n"


def test_without_a_server_that_serves_the_script_the_job_runs_itself(toy_server, tmp_path,
                                                                     monkeypatch):
    script = str(toy_server.script)
    monkeypatch.delenv(forkserver.ENV, raising=False)
    assert forkserver.delegate(script, ["echo", "0"]) is None
    monkeypatch.setenv(forkserver.ENV, str(tmp_path / "no-such-socket"))
    assert forkserver.delegate(script, ["echo", "0"]) is None
    monkeypatch.setenv(forkserver.ENV, toy_server.socket_path)
    other = tmp_path / "elsewhere" / "toy.py"  # the same name in another workflow
    other.parent.mkdir()
    other.write_text(TOY)
    assert forkserver.delegate(str(other), ["echo", "0"]) is None
    proc = client(toy_server, "echo", "0", cwd=tmp_path)  # the negative control: served
    assert proc.wait(timeout=60) == 0


def test_a_served_job_starts_with_the_servers_loaded_heap_frozen(toy_server, tmp_path):
    proc = client(toy_server, "frozen", cwd=tmp_path)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out == "True\n"
    alone = subprocess.run([sys.executable, "-c", "import toy; toy.main(['frozen'])"],
                           cwd=toy_server.script.parent, capture_output=True, text=True)
    assert alone.stdout == "False\n"  # the negative control: a job that runs itself


def test_a_served_job_runs_its_exit_handlers_as_a_process_of_its_own_would(toy_server,
                                                                          tmp_path):
    served, alone = tmp_path / "served.txt", tmp_path / "alone.txt"
    proc = client(toy_server, "atexit", str(served), cwd=tmp_path)
    assert proc.wait(timeout=60) == 0
    subprocess.run([sys.executable, "-c", f"import toy; toy.main(['atexit', {str(alone)!r}])"],
                   cwd=toy_server.script.parent, check=True)
    assert served.read_text() == alone.read_text() == "exit handlers ran"


def test_a_job_whose_process_goes_away_is_killed(toy_server, tmp_path):
    pid_file = tmp_path / "child.pid"
    proc = client(toy_server, "sleep", str(pid_file), cwd=tmp_path)
    assert wait_for(lambda: pid_file.exists() and pid_file.read_text() != "")
    child = int(pid_file.read_text())
    assert alive(child)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert wait_for(lambda: not alive(child), timeout=10)


def test_stop_kills_running_jobs_and_removes_the_socket(tmp_path):
    script = tmp_path / "toy.py"
    script.write_text(TOY)
    server = start_server(script, tmp_path / "server.log")
    pid_file = tmp_path / "child.pid"
    proc = client(server, "sleep", str(pid_file), cwd=tmp_path)
    assert wait_for(lambda: pid_file.exists() and pid_file.read_text() != "")
    child = int(pid_file.read_text())
    assert server.stop() == 0
    assert not alive(child)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGKILL, err
    assert not os.path.exists(os.path.dirname(server.socket_path))


def misbehave(server: forkserver.Server, how: str) -> None:
    """A client that sends a request the server cannot use, then goes away."""
    import socket
    import struct

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(server.socket_path)
        if how == "garbage":
            sock.sendall(b"not a request")
        elif how == "cut short":  # a header with streams, then less than it announced
            socket.send_fds(sock, [struct.pack("!Q", 1000)], [0, 1, 2])
            sock.sendall(b"x")
        elif how == "unknown script":
            payload = __import__("marshal").dumps({"script": "/elsewhere/x.py", "argv": [],
                                                   "cwd": "/", "env": {}})
            socket.send_fds(sock, [struct.pack("!Q", len(payload))], [0, 1, 2])
            sock.sendall(payload)


def test_bad_requests_leave_running_jobs_and_the_server_alone(toy_server, tmp_path):
    pid_file = tmp_path / "child.pid"
    running = client(toy_server, "sleep", str(pid_file), cwd=tmp_path)
    assert wait_for(lambda: pid_file.exists() and pid_file.read_text() != "")
    child = int(pid_file.read_text())
    fds = f"/proc/{toy_server.process.pid}/fd"
    before = len(os.listdir(fds))
    for _ in range(5):
        for how in ("garbage", "cut short", "unknown script"):
            misbehave(toy_server, how)
    assert wait_for(lambda: len(os.listdir(fds)) == before, timeout=10), os.listdir(fds)
    assert alive(child) and running.poll() is None
    proc = client(toy_server, "echo", "5", cwd=tmp_path)
    assert proc.wait(timeout=60) == 5
    running.kill()
    running.wait(timeout=30)


def test_a_server_stopped_while_it_loads_leaves_nothing_behind(tmp_path, monkeypatch):
    script = tmp_path / "toy.py"
    script.write_text(TOY)
    monkeypatch.setenv("TOY_PRELOAD_SECONDS", "30")
    log = tmp_path / "server.log"
    server = forkserver.start([str(script)], log)
    assert wait_for(lambda: log.exists() and "loading" in log.read_text())
    assert os.path.isdir(os.path.dirname(server.socket_path))
    assert server.stop(timeout=10) == 0
    assert not os.path.exists(os.path.dirname(server.socket_path))


def test_the_server_exits_when_the_process_that_started_it_is_gone(tmp_path):
    script = tmp_path / "toy.py"
    script.write_text(TOY)
    starter = (f"from dpbandits import forkserver\n"
               f"s = forkserver.start([{str(script)!r}], {str(tmp_path / 'server.log')!r})\n"
               f"print(s.process.pid, s.socket_path)")
    out = subprocess.run([sys.executable, "-c", starter], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split()
    pid, socket_path = int(out[0]), out[1]
    try:
        assert wait_for(lambda: not alive(pid), timeout=60)
        assert not os.path.exists(os.path.dirname(socket_path))
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


SPEC = {"accounting": "paper", "algorithm": "AdaPrivate-TS-Amp", "delta": 1e-05,
        "epsilon": 1.0, "experiment": "ts_synthetic",
        "instance": {"K": 5, "S": 2.0, "d": 5, "generator": "logistic_pool", "horizon": 200,
                     "n_arms": 20, "seed": 11},
        "instance_index": 0, "params": {"B": 20, "orders": "auto"}, "policy": "AdaPrivate-TS-Amp",
        "seed": 11, "trials": [0, 1]}


def run_simulate(server: forkserver.Server | None, spec: dict, out: Path, tmp_path: Path
                 ) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != forkserver.ENV}
    if server is not None:
        env[forkserver.ENV] = server.socket_path
    return subprocess.run([sys.executable, str(SIMULATE), json.dumps(spec), str(out),
                           str(tmp_path / f"{out.stem}.log")],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)


def test_a_shard_from_the_server_is_the_shard_a_lone_job_writes(tmp_path):
    server = start_server(SIMULATE, tmp_path / "server.log")
    try:
        served = run_simulate(server, SPEC, tmp_path / "served.h5", tmp_path)
        bad = run_simulate(server, {**SPEC, "trials": "all"}, tmp_path / "bad_served.h5",
                           tmp_path)
    finally:
        server.stop()
    alone = run_simulate(None, SPEC, tmp_path / "alone.h5", tmp_path)
    bad_alone = run_simulate(None, {**SPEC, "trials": "all"}, tmp_path / "bad_alone.h5",
                             tmp_path)
    assert served.returncode == alone.returncode == 0, served.stderr + alone.stderr
    assert (tmp_path / "server.log").read_text().count(": simulate") == 2  # the server ran both
    assert shard_digest(tmp_path / "served.h5") == shard_digest(tmp_path / "alone.h5")
    assert bad.returncode == bad_alone.returncode != 0
    assert bad.stderr.splitlines()[-1] == bad_alone.stderr.splitlines()[-1]
    assert not (tmp_path / "bad_served.h5").exists() and not (tmp_path / "bad_alone.h5").exists()
