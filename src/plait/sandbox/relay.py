"""The sandbox supervisor's half of user-code egress: a local listener that hands every connection
to the parent's egress proxy (``plait.net.egress``), which applies the SSRF guard.

Why a relay: with ``network: true`` the runner still lives in its own, empty network namespace,
so it can reach nothing but ``127.0.0.1`` inside that namespace. The supervisor (in the same
namespace, started before any user code) brings the loopback up, listens on ``127.0.0.1:PORT``
and passes each accepted socket as a file descriptor (``SCM_RIGHTS``) over a unix socket to the
proxy in the parent process: unix sockets bound to a path work across network namespaces, and
the proxy then talks to the user code's socket directly (no byte copying here). The runner is
told ``HTTP_PROXY=HTTPS_PROXY=http://127.0.0.1:PORT``, which HTTP clients use on their own.

Without a network namespace (a host that allows neither root nor user namespaces) the listener
is on the host's loopback and Landlock (ABI >= 4) limits the runner's TCP connects to its port.

Loaded by path by ``child.py``: standard library only.
"""

from __future__ import annotations

import fcntl
import socket
import struct

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
_IFREQ = "16sH22x"  # struct ifreq: name, flags (the union is 24 bytes on 64-bit)
BACKLOG = 64


def loopback_up() -> None:
    """Bring up `lo` in the current network namespace (needs CAP_NET_ADMIN there: root, or an
    unprivileged user namespace's root)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        got = fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack(_IFREQ, b"lo", 0))
        flags = struct.unpack(_IFREQ, got)[1]
        if not flags & IFF_UP:
            fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | IFF_UP))


class Relay:
    """A listener on 127.0.0.1 and a control connection to the egress proxy's unix socket."""

    def __init__(self, proxy_socket: str, in_netns: bool) -> None:
        self.control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener: socket.socket | None = None
        try:
            self.control.connect(proxy_socket)
            if in_netns:
                loopback_up()
            self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.listener.bind(("127.0.0.1", 0))
            self.listener.listen(BACKLOG)
            self.listener.setblocking(False)
        except BaseException:
            self.close()
            raise
        self.port: int = self.listener.getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def fileno(self) -> int:
        """The listener's fd, to poll for incoming connections."""
        assert self.listener is not None
        return self.listener.fileno()

    def hand_off(self) -> int:
        """Accept every pending connection and pass it to the proxy; returns how many."""
        assert self.listener is not None
        count = 0
        while True:
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return count
            except OSError:
                return count
            with conn:
                try:
                    socket.send_fds(self.control, [b"c"], [conn.fileno()])
                    count += 1
                except OSError:
                    pass  # the proxy is gone: the connection is closed, the client sees a reset

    def close(self) -> None:
        for sock in (self.listener, self.control):
            if sock is not None:
                try:
                    sock.close()
                except OSError:
                    pass
