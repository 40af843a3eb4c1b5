"""A real `reprieve serve` on loopback for a test: started, waited for, stopped."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import EXAMPLE, ROOT
from tests.ports import free_port

REQUESTS = ROOT / "examples" / "requests"


@dataclass
class Served:
    proc: subprocess.Popen
    port: int  # the verbs (--bind)
    plain_port: int | None  # --plain-bind, if asked for
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise


def call(url: str, data: bytes | None = None, *, timeout: float = 5, context=None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@contextmanager
def serve(tmp_path: Path, *args: str, plain: bool = False, snapshot: Path = EXAMPLE):
    """``reprieve serve --snapshot examples/cluster.yaml`` with ``args``, ready (its /readyz, on the
    plain port with ``plain``, else on the verbs port over plain HTTP)."""
    port = free_port()
    plain_port = free_port() if plain else None
    log = tmp_path / f"reprieve-{port}.log"
    command = [sys.executable, "-m", "extender.cli", "serve", "--snapshot", str(snapshot), "--bind", f"127.0.0.1:{port}", *args]
    if plain_port:
        command += ["--plain-bind", f"127.0.0.1:{plain_port}"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    served = Served(proc, port, plain_port, log)
    try:
        probe = f"http://127.0.0.1:{plain_port or port}/readyz"
        deadline = time.monotonic() + 20
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"reprieve serve exited with {proc.returncode}:\n{served.output()[-3000:]}")
            try:
                if call(probe, timeout=1)[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"reprieve serve not ready in 20s:\n{served.output()[-3000:]}")
            time.sleep(0.1)
        yield served
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
