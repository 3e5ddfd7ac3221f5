"""A port for a test's server that no kernel can be handed.

A kernel's ports are picked with port 0 (the system hands out one of its ephemeral ports), let go, then
bound by the kernel. A test server given port 0 in between can take a kernel's port in another test
worker: that kernel cannot start, or its client reaches the test's server. The system never hands out a
port below its ephemeral range for port 0, so a port picked there only meets other tests picking at random.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path


def unused_port() -> int:
    """A free port on 127.0.0.1 below the system's ephemeral range."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for port in random.sample(range(1024, low), 100):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:  # in use
                continue
            return port
    raise RuntimeError(f"no free port below {low}")
