"""The seccomp filter of the sandbox runner: the system calls user code never needs.

Why: Landlock, the uid drop and the namespaces confine what user code can *reach*; they do not
shrink the kernel it can *talk to*. Creating user and network namespaces, netfilter netlink
sockets, bpf, keyctl, io_uring, userfaultfd are the usual first steps of kernel exploits, and
none of them is needed to run a Python function. The filter refuses them with ``EPERM`` (not a
kill), so user code gets a plain ``PermissionError`` naming the call.

It also refuses process creation (``fork``, ``vfork``, ``clone`` without ``CLONE_THREAD``), so a
fork bomb cannot exist: threads still work (``clone3`` answers ``ENOSYS``, which makes glibc fall
back to ``clone``, whose flags the filter can read).

Sockets: ``AF_UNIX`` always (asyncio needs a socketpair); ``AF_INET``/``AF_INET6`` only when the
call allows network, and then only TCP streams (no UDP, raw or SCTP: egress goes through the HTTP
proxy, see ``plait.net.egress``); every other family (netlink, packet, vsock, ...) never.

Loaded by path by ``child.py`` (which cannot import the ``plait`` package), so this module uses
only the standard library and the ``pyseccomp`` binding of libseccomp. ``pyseccomp`` must be
imported *before* Landlock is enforced: it runs ``ldconfig -p`` to find libseccomp.
"""

from __future__ import annotations

import errno
import os
import sys
from types import ModuleType
from typing import Any

# Deny with EPERM whatever the arguments (names missing on an architecture are skipped).
DENIED_SYSCALLS = (
    # namespaces and mounts
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount",
    "fspick", "move_mount", "open_tree", "mount_setattr",
    # other processes' memory and file descriptors
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp",
    # kernel attack surface
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "keyctl", "add_key", "request_key",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "open_by_handle_at", "name_to_handle_at",
    # host administration (privileged anyway: defence in depth)
    "swapon", "swapoff", "reboot", "acct", "settimeofday", "clock_settime", "clock_adjtime",
    "adjtimex", "sethostname", "setdomainname", "iopl", "ioperm", "quotactl", "quotactl_fd",
    "syslog", "vhangup", "lookup_dcookie", "uselib",
    # new processes (threads are clone with CLONE_THREAD, allowed below)
    "fork", "vfork",
)  # fmt: skip

CLONE_THREAD = 0x00010000
CLONE_NEW_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
AF_UNIX, AF_INET, AF_INET6 = 1, 2, 10
SOCK_STREAM, SOCK_TYPE_MASK = 1, 0xF
_NON_STREAM_TYPES = (2, 3, 4, 5, 6, 10)  # DGRAM, RAW, RDM, SEQPACKET, DCCP, PACKET
IPPROTO_TCP = 6
SUPPORTED_MACHINES = ("x86_64", "aarch64")  # where clone's flags are its first argument

# Network modes of `build`: "off" (no inet sockets) or "proxy" (TCP streams only).
NETWORK_MODES = ("off", "proxy")


def load_binding() -> tuple[ModuleType | None, str | None]:
    """Import pyseccomp; returns (module, None) or (None, why it is unavailable)."""
    if not sys.platform.startswith("linux"):
        return None, "seccomp needs Linux"
    if os.uname().machine not in SUPPORTED_MACHINES:
        return None, f"the sandbox's seccomp filter supports {', '.join(SUPPORTED_MACHINES)} only"
    try:
        import pyseccomp  # type: ignore[import-untyped]  # no stubs; imported here, not at the top: optional
    except ImportError as exc:
        return None, f"the pyseccomp package is not installed ({exc})"
    except (OSError, RuntimeError) as exc:  # pyseccomp raises RuntimeError when libseccomp is missing
        return None, f"libseccomp could not be loaded ({exc}); install libseccomp2"
    return pyseccomp, None


def _allowed_family_rules(sc: ModuleType, families: tuple[int, ...]) -> list[tuple[Any, ...]]:
    """Comparisons on argument 0 that together match every socket family outside `families`.

    Values above the largest allowed family, including any with high bits set (the kernel only
    reads the low 32), are caught by one GE rule; the rest one by one."""
    top = max(families)
    rules: list[tuple[Any, ...]] = [(sc.Arg(0, sc.GE, top + 1),)]
    rules += [(sc.Arg(0, sc.EQ, value),) for value in range(top + 1) if value not in families]
    return rules


def build(sc: ModuleType, network: str) -> tuple[Any, int]:
    """The filter (not loaded yet) for a call whose network mode is `network`; returns
    (filter, number of rules)."""
    if network not in NETWORK_MODES:
        raise ValueError(f"unknown network mode {network!r}")
    eperm = sc.ERRNO(errno.EPERM)
    filt = sc.SyscallFilter(sc.ALLOW)
    filt.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)  # another ABI (int 0x80, x32) would skip the rules
    count = 0

    def deny(name: str, *args: Any, action: int = eperm) -> None:
        nonlocal count
        if sc.resolve_syscall(sc.Arch.NATIVE, name) < 0:
            return  # not on this architecture
        filt.add_rule(action, name, *args)
        count += 1

    for name in DENIED_SYSCALLS:
        deny(name)
    # clone3 passes its flags in a struct the filter cannot read: ENOSYS makes libc use clone.
    deny("clone3", action=sc.ERRNO(errno.ENOSYS))
    deny("clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))  # a new process, not a thread
    for flag in CLONE_NEW_FLAGS.values():
        deny("clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    families = (AF_UNIX,) if network == "off" else (AF_UNIX, AF_INET, AF_INET6)
    for syscall in ("socket", "socketpair"):
        for args in _allowed_family_rules(sc, families):
            deny(syscall, *args)
    if network == "proxy":
        for family in (AF_INET, AF_INET6):
            for sock_type in _NON_STREAM_TYPES:
                deny("socket", sc.Arg(0, sc.EQ, family), sc.Arg(1, sc.MASKED_EQ, SOCK_TYPE_MASK, sock_type))
            # TCP only: SCTP/MPTCP streams would not be covered by Landlock's TCP rules
            deny("socket", sc.Arg(0, sc.EQ, family), sc.Arg(2, sc.GE, IPPROTO_TCP + 1))
            for proto in range(1, IPPROTO_TCP):
                deny("socket", sc.Arg(0, sc.EQ, family), sc.Arg(2, sc.EQ, proto))
    return filt, count


def install(sc: ModuleType | None, network: str, unavailable: str | None = None) -> dict[str, Any]:
    """Build and load the filter into this process (irreversible); returns its report.

    Raises RuntimeError (saying why) when it cannot be installed: the caller must then not run
    user code. (This module defines no error class: child.py loads it by path, without plait.errors.)"""
    if sc is None:
        raise RuntimeError(unavailable or "seccomp is unavailable")
    try:
        filt, count = build(sc, network)
        filt.load()
    except OSError as exc:
        raise RuntimeError(f"the seccomp filter could not be loaded: {exc}") from exc
    return {"rules": count, "network": network}
