"""Runtime guard for evaluator children: an audit hook installed before the candidate is imported.

Policy (the static stage already refuses the obvious spellings; this is the second line):

- network: every ``socket.*`` event is refused;
- processes: ``os.fork``/``os.exec*``/``os.posix_spawn``/``os.system``/``os.kill``/``pty.spawn`` are
  refused; ``subprocess.Popen`` is refused except on device backends when the code that asks is
  Triton's own (``ptxas``, the C compiler that builds Triton's launcher, ``ldconfig``): the
  decision is made from the calling frame, i.e. the nearest frame that is not in the standard
  library must be inside the ``triton`` package (or ``torch_npu`` on Ascend);
- files: opening for writing, and removing / renaming / creating anything, is allowed only
  inside the child's temporary directory (which also holds ``TRITON_CACHE_DIR``) and ``/dev/null``;
- threads: ``_thread.start_new_thread`` is replaced by a refusing version while candidate code is
  on the stack (Python 3.11 has no audit event for thread start);
- ``ctypes``, ``exec``/``compile``, and attribute writes on library classes (``torch.Tensor.x = ...``)
  are refused when the candidate itself is the caller.

A refusal calls ``on_violation(message)``, which reports ``sandbox_violation`` and ends the child
with ``os._exit``: a candidate cannot catch it.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Callable
from typing import Any

_PROCESS_EVENTS = frozenset(
    {
        "os.system",
        "os.fork",
        "os.forkpty",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.startfile",
        "pty.spawn",
        "os.kill",
        "os.killpg",
        "signal.pthread_kill",
        "os.setuid",
        "os.setgid",
        "os.chroot",
    }
)
#: How subprocess.Popen starts a program; allowed only where Popen itself is (Triton's compiler calls).
_LIBRARY_SPAWN_EVENTS = frozenset({"os.posix_spawn", "os.exec"})
_FS_EVENTS = {
    # event: indexes of path arguments
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.mkdir": (0,),
    "os.rename": (0, 1),
    "os.replace": (0, 1),
    "os.link": (0, 1),
    "os.symlink": (1,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.truncate": (0,),
    "os.utime": (0,),
    "os.chdir": (0,),
    "os.mkfifo": (0,),
    "os.mknod": (0,),
    "shutil.rmtree": (0,),
    "shutil.copyfile": (1,),
    "shutil.copytree": (1,),
    "shutil.move": (1,),
    "shutil.chown": (0,),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_CANDIDATE_ONLY_EVENTS = ("ctypes.", "exec", "compile", "code.__new__", "function.__new__")
_WATCHED = frozenset(
    {"open", "subprocess.Popen", "import", "object.__setattr__", "object.__delattr__", *_PROCESS_EVENTS, *_FS_EVENTS}
)
_WATCHED_PREFIXES = ("socket.", *_CANDIDATE_ONLY_EVENTS)
#: Frequent events that never matter (checked first, for speed).
_IGNORED = frozenset(
    {"object.__getattr__", "sys._getframe", "builtins.id", "marshal.loads", "os.listdir", "os.scandir"}
)


def _stdlib_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {os.path.realpath(paths[key]) for key in ("stdlib", "platstdlib") if key in paths}
    return tuple(sorted(d + os.sep for d in dirs))


class SandboxGuard:
    """Audit-hook sandbox for one evaluator child.

    Args:
        sandbox_dir: the child's temporary directory (writes are allowed only below it).
        candidate_file: path of the candidate's source file (frames from it are "candidate").
        backend: ``interpreter``, ``cuda`` or ``npu``.
        on_violation: called with a message on a refused action; must not return.
        library_dirs: package directories whose code may start the compiler subprocesses.
    """

    def __init__(
        self,
        sandbox_dir: str,
        candidate_file: str,
        backend: str,
        on_violation: Callable[[str], Any],
        library_dirs: tuple[str, ...] = (),
    ) -> None:
        self.sandbox_dir = os.path.realpath(sandbox_dir) + os.sep
        self.candidate_file = candidate_file
        self.backend = backend
        self.on_violation = on_violation
        self.library_dirs = tuple(os.path.realpath(d) + os.sep for d in library_dirs)
        self.stdlib_dirs = _stdlib_dirs()
        self.own_file = os.path.realpath(__file__)
        self._busy = False
        self.active = False

    # --- classification -------------------------------------------------------------------------
    def _caller(self) -> str:
        """``candidate``, ``library`` or ``other`` for the nearest frame outside the stdlib."""
        frame = sys._getframe(2)
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename == self.candidate_file:
                return "candidate"
            if filename.startswith("<frozen") or filename == self.own_file:
                frame = frame.f_back
                continue
            real = filename if filename.startswith("<") else os.path.realpath(filename)
            if real.startswith(self.stdlib_dirs) and "site-packages" not in real:
                frame = frame.f_back
                continue
            if real.startswith(self.library_dirs):
                return "library"
            return "other"
        return "other"

    def _importer_is_candidate(self) -> bool:
        """Whether the statement that triggered an import is in the candidate's own code."""
        frame = sys._getframe(2)
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename.startswith("<frozen") or filename == self.own_file:
                frame = frame.f_back
                continue
            return filename == self.candidate_file
        return False

    def _candidate_on_stack(self) -> bool:
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename == self.candidate_file:
                return True
            frame = frame.f_back
        return False

    def _inside(self, path: Any) -> bool:
        if isinstance(path, int):
            return True  # an already-open descriptor
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, (str, os.PathLike)):
            return False
        text = os.fspath(path)
        if text in ("/dev/null", os.devnull):
            return True
        real = os.path.realpath(text)
        return (real + os.sep).startswith(self.sandbox_dir)

    # --- the hook -------------------------------------------------------------------------------
    def install(self) -> None:
        """Install the audit hook (irreversible) and the thread-start refusal."""
        sys.addaudithook(self._hook)
        self._patch_threads()
        self._patch_import()
        self.active = True

    def _refuse(self, message: str) -> None:
        self.active = False
        self.on_violation(message)

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if event in _IGNORED or not self.active or self._busy:
            return
        if not (event in _WATCHED or event.startswith(_WATCHED_PREFIXES)):
            return
        self._busy = True
        try:
            self._check(event, args)
        finally:
            self._busy = False

    def _check(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = [*args, None, None, None][:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            if writing and not self._inside(path):
                self._refuse(
                    f"tried to open {os.fspath(path) if path is not None else '?'} for writing outside its directory"
                )
            return
        if event.startswith("socket."):
            self._refuse(f"tried to use the network ({event})")
            return
        if event in _PROCESS_EVENTS:
            # subprocess.Popen may start the child with os.posix_spawn (Python >= 3.8 on Linux):
            # the same library-caller rule as for the Popen event itself applies.
            if event in _LIBRARY_SPAWN_EVENTS and self.backend != "interpreter" and self._caller() == "library":
                return
            self._refuse(f"tried to create or signal a process ({event})")
            return
        if event == "subprocess.Popen":
            executable = args[0] if args else "?"
            if self.backend != "interpreter" and self._caller() == "library":
                return
            name = os.path.basename(os.fsdecode(executable)) if isinstance(executable, (str, bytes)) else executable
            self._refuse(f"tried to start a subprocess ({name})")
            return
        if event in _FS_EVENTS:
            for index in _FS_EVENTS[event]:
                if index < len(args) and not self._inside(args[index]):
                    self._refuse(f"tried to change the file system outside its directory ({event})")
                    return
            return
        if event == "import":
            if not self._importer_is_candidate():
                return
            from ascend_kernel_gym.evaluation.policy import ALLOWED_IMPORT_ROOTS, FORBIDDEN_MODULES

            module = str(args[0]) if args else ""
            root = module.split(".")[0]
            if root not in ALLOWED_IMPORT_ROOTS or root in FORBIDDEN_MODULES:
                self._refuse(f"tried to import the forbidden module {module}")
            return
        if event in ("object.__setattr__", "object.__delattr__"):
            target = args[0] if args else None
            if isinstance(target, type) and self._caller() == "candidate":
                owner = getattr(target, "__module__", "")
                if owner != _candidate_module_name(self.candidate_file):
                    self._refuse(f"tried to modify the library class {owner}.{target.__name__} (monkeypatching)")
            return
        if event.startswith(_CANDIDATE_ONLY_EVENTS) and self._caller() == "candidate":
            self._refuse(f"tried to use {event}")

    def _patch_import(self) -> None:
        """Check ``import`` statements in candidate code even for modules already in ``sys.modules``
        (those raise no ``import`` audit event)."""
        import builtins

        from ascend_kernel_gym.evaluation.policy import ALLOWED_IMPORT_ROOTS, FORBIDDEN_MODULES

        original = builtins.__import__
        guard = self

        def guarded_import(
            name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
        ) -> Any:
            if guard.active and sys._getframe(1).f_code.co_filename == guard.candidate_file:
                root = name.split(".")[0]
                if level or root not in ALLOWED_IMPORT_ROOTS or root in FORBIDDEN_MODULES:
                    guard._refuse(f"tried to import the forbidden module {name}")
            return original(name, globals, locals, fromlist, level)

        builtins.__import__ = guarded_import

    def _patch_threads(self) -> None:
        import _thread
        import threading

        guard = self

        def make_refusing(original: Callable[..., Any]) -> Callable[..., Any]:
            def start(*args: Any, **kwargs: Any) -> Any:
                if guard.active and guard._candidate_on_stack():
                    allowed = guard.backend != "interpreter" and guard._caller() == "library"
                    if not allowed:
                        guard._refuse("tried to start a thread")
                return original(*args, **kwargs)

            return start

        for module, name in (
            (_thread, "start_new_thread"),
            (_thread, "start_new"),
            (_thread, "start_joinable_thread"),
            (threading, "_start_new_thread"),
            (threading, "_start_joinable_thread"),
        ):
            original = getattr(module, name, None)
            if original is not None:
                setattr(module, name, make_refusing(original))


_CANDIDATE_MODULE = "akg_candidate"


def _candidate_module_name(_candidate_file: str) -> str:
    return _CANDIDATE_MODULE
