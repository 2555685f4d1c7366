"""The Linux calls behind :mod:`.os_sandbox`: namespaces, mounts, capabilities, Landlock, seccomp.

Thin ``ctypes`` wrappers over the C library (Python 3.11 has no ``os.unshare``), Landlock's three
system calls, and the PyPI ``pyseccomp`` package (over ``libseccomp``) for the syscall filter.
Every failing call raises :class:`OSError` with the C library's errno; a facility that this
machine lacks raises :class:`LayerUnavailableError`.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import glob
import os
from collections.abc import Iterable
from types import ModuleType

# Loaded now, outside any sandbox: finding libseccomp runs ``ldconfig`` and reads the loader cache.
_SECCOMP: ModuleType | None
try:
    import pyseccomp as _SECCOMP
except ImportError:
    _SECCOMP, _SECCOMP_MISSING = None, "the pyseccomp package is not installed (pip install pyseccomp)"
except (RuntimeError, OSError) as _exc:
    _SECCOMP, _SECCOMP_MISSING = None, f"libseccomp is missing (Debian: libseccomp2): {_exc}"

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWCGROUP = 0x02000000
#: namespace flags a sandboxed ``clone`` may not use once the sandbox is set up
CLONE_NAMESPACE_FLAGS = (
    CLONE_NEWNS,
    CLONE_NEWUTS,
    CLONE_NEWIPC,
    CLONE_NEWUSER,
    CLONE_NEWPID,
    CLONE_NEWNET,
    CLONE_NEWCGROUP,
)

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_MOVE = 8192
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
#: SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP, SECBIT_KEEP_CAPS_LOCKED, SECBIT_NO_CAP_AMBIENT_RAISE and their locks
SECUREBITS_LOCKED_DOWN = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80
_CAPABILITY_VERSION_3 = 0x20080522

_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
LL_EXECUTE = 1 << 0
LL_WRITE_FILE = 1 << 1
LL_READ_FILE = 1 << 2
LL_READ_DIR = 1 << 3
LL_TRUNCATE = 1 << 14
LL_IOCTL_DEV = 1 << 15
#: every right on files beneath a directory that the scratch directory gets (EXECUTE aside)
_LL_ABI1_ALL = (1 << 13) - 1

#: system calls no kernel evaluation needs: EPERM once the sandbox is on
DENIED_SYSCALLS = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "open_by_handle_at",
    "name_to_handle_at",
    "quotactl",
    "acct",
    "syslog",
    "iopl",
    "ioperm",
    "settimeofday",
    "clock_settime",
    "sethostname",
    "setdomainname",
    "execveat",
)
EXEC_SYSCALLS = ("execve",)


class LayerUnavailableError(Exception):
    """This machine lacks the facility of a sandbox layer (the message says what is missing)."""


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int) -> int:
    if result == -1:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))
    return result


def _path(value: str | None) -> bytes | None:
    return None if value is None else os.fsencode(value)


def unshare(flags: int) -> None:
    _check(_libc().unshare(ctypes.c_int(flags)))


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    """``mount(2)``; a failure names the mount (which path of a policy a machine refuses)."""
    encoded = None if data is None else data.encode()
    if _libc().mount(_path(source), _path(target), _path(fstype), ctypes.c_ulong(flags), encoded) == -1:
        number = ctypes.get_errno()
        what = f"{source} on {target}" if source else f"remount of {target}"
        raise OSError(number, f"{os.strerror(number)} (mount {what}, flags {flags:#x})")


def umount2(target: str, flags: int) -> None:
    _check(_libc().umount2(_path(target), ctypes.c_int(flags)))


def pivot_root(new_root: str, put_old: str) -> None:
    _check(_libc().pivot_root(_path(new_root), _path(put_old)))


def chroot(path: str) -> None:
    _check(_libc().chroot(_path(path)))


def prctl(option: int, arg2: int = 0, arg3: int = 0) -> None:
    libc = _libc()
    _check(
        libc.prctl(
            ctypes.c_int(option), ctypes.c_ulong(arg2), ctypes.c_ulong(arg3), ctypes.c_ulong(0), ctypes.c_ulong(0)
        )
    )


def write_id_maps(uid: int, gid: int) -> None:
    """Map ``uid``/``gid`` to root in the new user namespace (``setgroups`` denied, as unprivileged needs)."""
    try:
        with open("/proc/self/setgroups", "w") as handle:
            handle.write("deny")
    except FileNotFoundError:
        pass
    with open("/proc/self/uid_map", "w") as handle:
        handle.write(f"0 {uid} 1")
    with open("/proc/self/gid_map", "w") as handle:
        handle.write(f"0 {gid} 1")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> str:
    """Drop every capability: bounding set, ambient set, securebits locked, then capset to nothing."""
    for cap in range(64):
        try:
            prctl(PR_CAPBSET_DROP, cap)
        except OSError as exc:
            if exc.errno == errno.EINVAL:  # past the last capability this kernel knows
                break
            raise
    try:
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError:
        pass
    try:
        prctl(PR_SET_SECUREBITS, SECUREBITS_LOCKED_DOWN)
    except OSError:
        pass  # needs CAP_SETPCAP; with no capabilities left and no_new_privs nothing is regained anyway
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc().capset(ctypes.byref(header), ctypes.byref(data)))
    return ""


def expand_globs(patterns: Iterable[str]) -> tuple[str, ...]:
    paths: list[str] = []
    for pattern in patterns:
        paths += sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
    return tuple(dict.fromkeys(p for p in paths if os.path.exists(p)))


# --- Landlock ---------------------------------------------------------------------------------
class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _syscall(number: int, *args: object) -> int:
    return _check(_libc().syscall(ctypes.c_long(number), *args))


def landlock_abi() -> int:
    """Landlock's ABI version (0: not available)."""
    try:
        return _syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except OSError:
        return 0


def _fs_rights(abi: int) -> int:
    rights = _LL_ABI1_ALL
    if abi >= 2:
        rights |= 1 << 13  # REFER
    if abi >= 3:
        rights |= LL_TRUNCATE
    if abi >= 5:
        rights |= LL_IOCTL_DEV
    return rights


def apply_landlock(
    read: Iterable[str], exec_paths: Iterable[str], devices: Iterable[str], writable: Iterable[str]
) -> str:
    """Restrict this process: reads beneath ``read`` (and ``/proc``; writes only in its own
    ``/proc/self``), execution beneath ``exec_paths``, device nodes read/write/ioctl, everything
    but execution beneath ``writable``;
    TCP bind/connect refused (ABI 4+); signals and abstract sockets out of the domain refused (ABI 6+).
    """
    abi = landlock_abi()
    if abi <= 0:
        raise LayerUnavailableError("the kernel has no Landlock (not built in, or not in the lsm= list)")
    handled = _fs_rights(abi)
    file_only = LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | (handled & (LL_TRUNCATE | LL_IOCTL_DEV))
    attr = _RulesetAttr(handled, 0, 0)
    size = 8
    parts = ["files"]
    if abi >= 4:
        attr.net = 0b11  # LANDLOCK_ACCESS_NET_BIND_TCP | CONNECT_TCP, with no rule granting them
        size = 16
        parts.append("TCP")
    if abi >= 6:
        attr.scoped = 0b11  # LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | SIGNAL
        size = 24
        parts.append("signals")
    ruleset = _syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        rules: list[tuple[str, int]] = [(p, LL_READ_FILE | LL_READ_DIR) for p in (*read, "/proc")]
        rules += [(p, LL_EXECUTE | LL_READ_FILE | LL_READ_DIR) for p in exec_paths]
        rules += [(p, LL_READ_FILE | LL_WRITE_FILE | LL_READ_DIR | LL_TRUNCATE | LL_IOCTL_DEV) for p in devices]
        rules += [(p, handled & ~LL_EXECUTE) for p in writable]
        # Its own /proc entries (/proc/self resolves to this process's directory): CUDA writes there.
        rules.append(("/proc/self", LL_READ_FILE | LL_WRITE_FILE | LL_READ_DIR | LL_TRUNCATE))
        for path, rights in rules:
            _add_rule(ruleset, path, rights & handled, file_only)
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        _syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return f"ABI {abi}: {', '.join(parts)}"


def _add_rule(ruleset: int, path: str, rights: int, file_only: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # missing or invisible here: nothing to allow
    try:
        if not os.path.isdir(f"/proc/self/fd/{fd}"):
            rights &= file_only
        beneath = _PathBeneath(rights, fd)
        _syscall(
            _SYS_LANDLOCK_ADD_RULE,
            ctypes.c_int(ruleset),
            ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
            ctypes.byref(beneath),
            ctypes.c_uint32(0),
        )
    finally:
        os.close(fd)


# --- seccomp ----------------------------------------------------------------------------------
def apply_seccomp(allow_exec: bool) -> str:
    """Load the deny-list filter (allow by default, EPERM for :data:`DENIED_SYSCALLS`).

    ``clone`` with a namespace flag is refused too; ``clone3`` answers ENOSYS (its flags sit in
    memory a filter cannot read), so the C library falls back to ``clone``.
    """
    sc = _SECCOMP
    if sc is None:
        raise LayerUnavailableError(_SECCOMP_MISSING)
    arch = sc.system_arch()
    deny = DENIED_SYSCALLS + (() if allow_exec else EXEC_SYSCALLS)
    filt = sc.SyscallFilter(sc.ALLOW)
    refused = 0
    for name in deny:
        number = sc.resolve_syscall(arch, name)
        if number < 0:
            continue  # not a system call of this architecture
        filt.add_rule(sc.ERRNO(errno.EPERM), number)
        refused += 1
    clone3 = sc.resolve_syscall(arch, "clone3")
    if clone3 >= 0:
        filt.add_rule(sc.ERRNO(errno.ENOSYS), clone3)
    for flag in CLONE_NAMESPACE_FLAGS:
        filt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    filt.load()
    return f"{refused} calls refused" + ("" if allow_exec else ", execve included")
