"""Which local process owns a client connection (Linux /proc; best effort, never raises).

Used to group requests of agents that send no session id: one process, one session.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Proc:
    pid: int
    name: str  # argv[0]'s basename, or /proc/<pid>/comm
    cmdline: str  # first 200 characters, for agent detection only (never written)


def _hex_addr(host: str, port: int) -> set[str]:
    """The /proc/net/tcp{,6} spellings of a local address."""
    out: set[str] = set()
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return out
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if isinstance(ip, ipaddress.IPv4Address):
        v4 = f"{struct.unpack('<I', ip.packed)[0]:08X}:{port:04X}"
        out.add(v4)
        mapped = socket.inet_pton(socket.AF_INET6, f"::ffff:{ip}")
        words = struct.unpack("<4I", mapped)
        out.add("".join(f"{w:08X}" for w in words) + f":{port:04X}")
    else:
        words = struct.unpack("<4I", ip.packed)
        out.add("".join(f"{w:08X}" for w in words) + f":{port:04X}")
    return out


def _socket_inode(host: str, port: int) -> int | None:
    wanted = _hex_addr(host, port)
    if not wanted:
        return None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as fh:
                next(fh, None)
                for line in fh:
                    cols = line.split()
                    if len(cols) > 9 and cols[1] in wanted:
                        return int(cols[9])
        except OSError:
            continue
    return None


def _candidates(first: int | None) -> list[int]:
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
    if first is None:
        return pids
    # the launched agent and its descendants first: they are almost always the answer
    children: dict[int, list[int]] = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
            ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(pid)
    ordered: list[int] = []
    stack = [first]
    seen: set[int] = set()
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        ordered.append(p)
        stack.extend(children.get(p, []))
    return ordered + [p for p in pids if p not in seen]


def peer_process(host: str, port: int, first_pid: int | None = None) -> Proc | None:
    """The process holding the local socket ``host:port`` (the proxy's client), if visible."""
    if not host or not _is_loopback(host):
        return None
    inode = _socket_inode(host, port)
    if not inode:
        return None
    target = f"socket:[{inode}]"
    me = os.getpid()
    for pid in _candidates(first_pid):
        if pid == me:
            continue
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"{fd_dir}/{fd}") == target:
                    return _describe(pid)
            except OSError:
                continue
    return None


def _describe(pid: int) -> Proc:
    cmd = ""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read(400).replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        pass
    name = os.path.basename(cmd.split(" ", 1)[0]) if cmd else ""
    if not name:
        try:
            with open(f"/proc/{pid}/comm") as fh:
                name = fh.read().strip()
        except OSError:
            name = "?"
    return Proc(pid=pid, name=name, cmdline=cmd[:200])


def _is_loopback(host: str) -> bool:
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback
