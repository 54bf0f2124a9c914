"""Real redis-server processes on loopback ports for tests: one server, or a Redis Cluster.

Started with persistence off (``--save '' --appendonly no``) unless a test asks for AOF, and
stopped by PID. Skips the calling test when redis-server is not installed (CI installs it).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

_START_TIMEOUT = 10.0


def free_port() -> int:
    """A free loopback port whose cluster-bus twin (port + 10000) is free too."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port + 10000 > 65535:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair found")


def _cli(port: int, *args: str, timeout: float = 30.0) -> str:
    out = subprocess.run(
        ["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    return out.stdout


@dataclass
class RedisNode:
    port: int
    proc: subprocess.Popen[bytes]
    dir: Path

    def ping(self) -> bool:
        try:
            return _cli(self.port, "PING", timeout=2).strip() == "PONG"
        except (subprocess.SubprocessError, OSError):
            return False

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


@dataclass
class RedisDeployment:
    nodes: list[RedisNode] = field(default_factory=list)
    cluster: bool = False

    @property
    def url(self) -> str:
        if self.cluster:
            return "redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)
        return f"redis://127.0.0.1:{self.nodes[0].port}/0"

    def stop(self) -> None:
        for node in self.nodes:
            node.kill()


def start_node(directory: Path, *, cluster: bool, extra: Sequence[str] = ()) -> RedisNode:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    args = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory)]
    args += ["--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"]
    if cluster:
        args += ["--cluster-enabled", "yes", "--cluster-config-file", str(directory / "nodes.conf")]
        args += ["--cluster-node-timeout", "1000"]
    args += list(extra)
    with (directory / "redis.log").open("wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    node = RedisNode(port, proc, directory)
    deadline = time.monotonic() + _START_TIMEOUT
    while not node.ping():
        if proc.poll() is not None or time.monotonic() > deadline:
            node.kill()
            raise RuntimeError(f"redis-server on port {port} did not start: see {directory}")
        time.sleep(0.05)
    return node


def start_single(directory: Path, extra: Sequence[str] = ()) -> RedisDeployment:
    return RedisDeployment([start_node(directory / "single", cluster=False, extra=extra)])


def start_cluster(
    directory: Path, masters: int = 3, replicas: int = 0, extra: Sequence[str] = ()
) -> RedisDeployment:
    deployment = RedisDeployment(cluster=True)
    try:
        for i in range(masters * (1 + replicas)):
            deployment.nodes.append(start_node(directory / f"n{i}", cluster=True, extra=extra))
        addrs = [f"127.0.0.1:{n.port}" for n in deployment.nodes]
        _cli(
            deployment.nodes[0].port,
            "--cluster",
            "create",
            *addrs,
            "--cluster-replicas",
            str(replicas),
            "--cluster-yes",
        )
        wait_cluster_ok(deployment)
    except BaseException:
        deployment.stop()
        raise
    return deployment


def _settled(node: RedisNode) -> bool:
    """The node sees the cluster as ok and, if it is a replica, has synced with its master
    (a replica that never synced refuses to fail over: its data could be arbitrarily old)."""
    if "cluster_state:ok" not in _cli(node.port, "CLUSTER", "INFO", timeout=2):
        return False
    replication = _cli(node.port, "INFO", "replication", timeout=2)
    return "role:slave" not in replication or "master_link_status:up" in replication


def wait_cluster_ok(deployment: RedisDeployment, timeout: float = 30.0) -> None:
    """Until every live node says cluster_state:ok and every replica has synced (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        live = [n for n in deployment.nodes if n.proc.poll() is None]
        try:
            if all(_settled(n) for n in live):
                return
        except subprocess.SubprocessError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the Redis cluster did not reach cluster_state:ok")
