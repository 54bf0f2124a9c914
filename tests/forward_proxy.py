"""A real HTTP forward proxy for tests: Debian's tinyproxy, on a loopback address and port of
its own, logging every request it forwards. Stopped by PID. Skips the calling test when
tinyproxy is not installed (CI installs it)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

_START_TIMEOUT = 10.0


@dataclass(frozen=True)
class ForwardProxy:
    address: str
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.port}"

    def forwarded(self) -> list[str]:
        """The request lines it forwarded, e.g. 'GET http://127.0.0.1:8000/ HTTP/1.1'."""
        if not self.log.exists():
            return []
        lines = self.log.read_text(errors="replace").splitlines()
        return [line.split("): ", 1)[1] for line in lines if "]: Request (file descriptor" in line]


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


@contextmanager
def tinyproxy(directory: Path, address: str = "127.0.0.2") -> Iterator[ForwardProxy]:
    """tinyproxy listening on ``address`` (another loopback address than the test sites', so a
    test can tell the proxy's address from theirs), for clients on loopback."""
    binary = shutil.which("tinyproxy")
    if binary is None:
        pytest.skip("tinyproxy is not installed (apt-get install tinyproxy)")
    port = _free_port(address)
    proxy = ForwardProxy(address, port, directory / "tinyproxy.log")
    conf = directory / "tinyproxy.conf"
    conf.write_text(
        f'Port {port}\nListen {address}\nTimeout 30\nLogFile "{proxy.log}"\nLogLevel Info\n'
        "MaxClients 100\nAllow 127.0.0.0/8\n"
    )
    process = subprocess.Popen(
        [binary, "-d", "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + _START_TIMEOUT
        while True:
            try:
                socket.create_connection((address, port), timeout=1.0).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"tinyproxy did not start on {address}:{port}") from None
                time.sleep(0.05)
        yield proxy
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
