"""The new root of a sandboxed child's mount namespace (used by :mod:`.os_sandbox`).

A tmpfs is mounted on an empty directory inside the scratch directory (so no host path is
hidden while the root is built); the allowed paths are bind-mounted into it, read-only, at their
own absolute paths (symbolic links on the way are recreated), the scratch directory read-write,
the device nodes one by one, a private ``/dev/shm`` and ``/proc``; then ``pivot_root`` makes it
the root and the old root is detached. Bind mounts are not recursive: a mount below an allowed
path (a cgroup tree under ``/sys``) stays invisible instead of writable.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable

from ascend_kernel_gym.evaluation import os_sandbox_calls as calls

STAGING_NAME = ".akg-root"
_LOCKABLE = (
    (os.ST_RDONLY, calls.MS_RDONLY),
    (os.ST_NOSUID, calls.MS_NOSUID),
    (os.ST_NODEV, calls.MS_NODEV),
    (os.ST_NOEXEC, calls.MS_NOEXEC),
    (os.ST_NOATIME, calls.MS_NOATIME),
    (os.ST_NODIRATIME, calls.MS_NODIRATIME),
    (os.ST_RELATIME, calls.MS_RELATIME),
)
_MAX_LINK_HOPS = 40


def _kept_flags(path: str) -> int:
    """The mount flags of ``path``'s mount that a bind remount must keep (locked in a user namespace)."""
    have = os.statvfs(path).f_flag
    return sum(ms for st, ms in _LOCKABLE if have & st)


def _beneath(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


class RootBuilder:
    """Builds and enters the new root; :meth:`roll_back` undoes a build that failed before the switch."""

    def __init__(self, scratch: str, shm_mb: int, fresh_proc: bool) -> None:
        self.scratch = scratch
        self.staging = os.path.join(scratch, STAGING_NAME)
        self.shm_mb = max(1, int(shm_mb))
        self.fresh_proc = fresh_proc
        self.bound: list[tuple[str, str]] = []
        self.mounts = 0
        self.mode = ""
        self.proc_mounted = False
        self.staged = False
        self.switched = False
        self.notes: list[str] = []

    # --- public -------------------------------------------------------------------------------
    def build(
        self,
        read: Iterable[str],
        exec_paths: Iterable[str],
        devices: Iterable[str],
        hidden: Iterable[str],
        scratch_noexec: bool,
    ) -> list[str]:
        """Build the new root and switch to it. Raises OSError (then :meth:`roll_back`)."""
        originals = [*read, *exec_paths, *devices]
        calls.mount(None, "/", None, calls.MS_REC | calls.MS_PRIVATE)
        os.mkdir(self.staging, 0o700)
        self.staged = True
        calls.mount("tmpfs", self.staging, "tmpfs", calls.MS_NOSUID | calls.MS_NODEV, "mode=0755,size=16m")
        for real, kind in self._plan(read, exec_paths, devices):
            self._bind(real, kind, scratch_noexec)
        for path in originals:
            self._mirror_links(path)
        for path in hidden:
            self._mask(path)
        self._make_dev()
        self._make_proc()
        self._switch()
        return self.notes

    def roll_back(self) -> None:
        if self.staged and not self.switched:
            try:
                calls.umount2(self.staging, calls.MNT_DETACH)
            except OSError:
                pass
            try:
                os.rmdir(self.staging)
            except OSError:
                pass

    # --- planning -----------------------------------------------------------------------------
    def _plan(self, read: Iterable[str], exec_paths: Iterable[str], devices: Iterable[str]) -> list[tuple[str, str]]:
        """(real path, kind) to bind, parents first; a path beneath one of the same kind is dropped."""
        wanted: dict[str, str] = {}
        missing = 0
        for kind, paths in (("ro", [*read, *exec_paths]), ("dev", devices), ("rw", [self.scratch])):
            for path in paths:
                real = os.path.realpath(path)
                if not os.path.exists(real):
                    missing += 1
                    continue
                if kind == "rw" or wanted.get(real) != "rw":
                    wanted[real] = kind
        if missing:
            self.notes.append(f"{missing} allowed paths do not exist here (skipped)")
        plan: list[tuple[str, str]] = []
        for real in sorted(wanted, key=lambda p: (p.count("/"), p)):
            kind = wanted[real]
            cover = self._cover(real, plan)
            if cover is not None and (cover == kind or cover == "rw"):
                continue
            plan.append((real, kind))
        return plan

    @staticmethod
    def _cover(path: str, bound: list[tuple[str, str]]) -> str | None:
        """The kind of the deepest bound path that holds ``path`` (None: it is on the new root's tmpfs)."""
        best: tuple[int, str] | None = None
        for real, kind in bound:
            if _beneath(path, real) and (best is None or len(real) > best[0]):
                best = (len(real), kind)
        return None if best is None else best[1]

    # --- building -----------------------------------------------------------------------------
    def _target(self, path: str) -> str:
        return self.staging + path

    def _bind(self, real: str, kind: str, scratch_noexec: bool) -> None:
        target = self._target(real)
        if self._cover(real, self.bound) is None:  # on the tmpfs: make the mount point
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if os.path.isdir(real):
                os.makedirs(target, exist_ok=True)
            elif not os.path.exists(target):
                os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o644))
        try:
            calls.mount(real, target, None, calls.MS_BIND)
        except OSError as exc:
            if exc.errno != errno.EINVAL or kind == "rw":
                raise
            # Mounts below ``real`` that the user namespace locked (cgroup trees under /sys): only a
            # recursive bind may take them along; each is made read-only like ``real`` itself.
            calls.mount(real, target, None, calls.MS_BIND | calls.MS_REC)
            left = self._submounts_read_only(target)
            self.notes.append(
                f"{real} bound with the mounts beneath it (they were locked)"
                + (f"; {left} of them stay writable" if left else "")
            )
        flags = calls.MS_BIND | calls.MS_REMOUNT | calls.MS_NOSUID | _kept_flags(real)
        if kind != "rw":
            flags |= calls.MS_RDONLY
        if kind != "dev":
            flags |= calls.MS_NODEV
        if kind == "rw" and scratch_noexec:
            flags |= calls.MS_NOEXEC
        calls.mount(None, target, None, flags)
        self.bound.append((real, kind))
        self.mounts += 1

    @staticmethod
    def _submounts_read_only(target: str) -> int:
        """Remount every mount beneath ``target`` read-only; returns how many refused."""
        prefix = target.rstrip("/") + "/"
        with open("/proc/self/mountinfo") as handle:
            points = [line.split()[4] for line in handle]
        # mountinfo escapes spaces, tabs, newlines and backslashes as octal
        points = [re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), p) for p in points]
        refused = 0
        for point in sorted({p for p in points if p.startswith(prefix)}, key=len):
            flags = calls.MS_BIND | calls.MS_REMOUNT | calls.MS_RDONLY | calls.MS_NOSUID | calls.MS_NODEV
            try:
                calls.mount(None, point, None, flags | _kept_flags(point))
            except OSError:
                refused += 1
        return refused

    def _mirror_links(self, path: str) -> None:
        """Recreate the symbolic links on the way to ``path`` (``/lib64`` -> ``usr/lib64``) on the tmpfs."""
        pending = [p for p in path.split("/") if p]
        current = "/"
        hops = 0
        while pending:
            name = pending.pop(0)
            if name in (".", ".."):
                current = os.path.dirname(current) if name == ".." else current
                continue
            here = os.path.join(current, name)
            try:
                info = os.lstat(here)
            except OSError:
                return
            if not stat.S_ISLNK(info.st_mode):
                current = here
                continue
            hops += 1
            if hops > _MAX_LINK_HOPS:
                return
            target = os.readlink(here)
            if self._cover(here, self.bound) is None:
                os.makedirs(os.path.dirname(self._target(here)), exist_ok=True)
                if not os.path.lexists(self._target(here)):
                    os.symlink(target, self._target(here))
            pending = [p for p in target.split("/") if p] + pending
            current = "/" if target.startswith("/") else current

    def _mask(self, path: str) -> None:
        real = os.path.realpath(path)
        if not os.path.isdir(real) or self._cover(real, self.bound) is None:
            return  # not visible in the new root anyway
        flags = calls.MS_RDONLY | calls.MS_NOSUID | calls.MS_NODEV | calls.MS_NOEXEC
        calls.mount("tmpfs", self._target(real), "tmpfs", flags, "mode=0555,size=4k")
        self.mounts += 1

    def _make_dev(self) -> None:
        dev = self._target("/dev")
        os.makedirs(os.path.join(dev, "shm"), exist_ok=True)
        flags = calls.MS_NOSUID | calls.MS_NODEV | calls.MS_NOEXEC
        calls.mount("tmpfs", os.path.join(dev, "shm"), "tmpfs", flags, f"mode=1777,size={self.shm_mb}m")
        self.mounts += 1
        links = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1"}
        links["stderr"] = "/proc/self/fd/2"
        for name, target in links.items():
            if not os.path.lexists(os.path.join(dev, name)):
                os.symlink(target, os.path.join(dev, name))

    def _make_proc(self) -> None:
        target = self._target("/proc")
        os.makedirs(target, exist_ok=True)
        if self.fresh_proc:
            try:
                calls.mount("proc", target, "proc", calls.MS_NOSUID | calls.MS_NODEV | calls.MS_NOEXEC)
                self.proc_mounted = True
                self.mounts += 1
                return
            except OSError as exc:
                self.notes.append(f"a private /proc could not be mounted ({errno.errorcode.get(exc.errno or 0)})")
        # The host's /proc, writable: the CUDA driver writes its own /proc/self entries and fails to
        # start (error 304) on a read-only /proc. Landlock keeps writes to /proc/self, and the user
        # namespace keeps /proc/sys and other processes' entries out of reach.
        self._bind("/proc", "rw", False)

    def _switch(self) -> None:
        os.chdir(self.staging)
        try:
            calls.pivot_root(".", ".")
            calls.umount2(".", calls.MNT_DETACH)
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
            # The root is not a mount that pivot_root accepts (an initramfs): move and chroot instead.
            calls.mount(".", "/", None, calls.MS_MOVE)
            calls.chroot(".")
            self.mode = "; chroot fallback"
        self.switched = True
        os.chdir("/")
        try:
            flags = calls.MS_BIND | calls.MS_REMOUNT | calls.MS_RDONLY | calls.MS_NOSUID | calls.MS_NODEV
            calls.mount(None, "/", None, flags)
        except OSError as exc:
            self.notes.append(f"the new root's tmpfs stays writable ({errno.errorcode.get(exc.errno or 0)})")
        try:
            os.rmdir(self.staging)  # the empty mount point, seen through the scratch directory
        except OSError:
            pass
