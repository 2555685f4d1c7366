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
  on the stack (Python 3.11 has no audit event for thread start); so is
  ``_posixsubprocess.fork_exec``, which starts a program without any audit event;
- introspection: ``sys._getframe``, reading ``tb_frame`` / ``gi_frame`` / ``f_code`` / ``__code__``,
  ``exec`` / ``compile`` and attribute writes on library classes are refused when the candidate
  asks for them, itself or through a standard-library function (``functools.update_wrapper``
  reads any attribute it is given by name; ``typing_extensions`` counts as standard library):
  only the few modules that use them for their own bookkeeping may (frame reads:
  ``collections.namedtuple``, ``typing``, ``enum``, ``dataclasses``, see :data:`FRAME_HELPERS`;
  code: the methods ``dataclasses`` and ``namedtuple`` write, :data:`CODEGEN_HELPERS`), and
  Triton's or PyTorch's own code. Code that ``exec`` / ``eval`` made (``<string>``) and that asks
  for any of these while the candidate's code is on the stack is the candidate's (a string it had
  a library evaluate). ``gc.get_objects`` / ``get_referrers``, ``sys._current_frames``,
  ``sys.settrace`` / ``setprofile`` are refused whenever the candidate's code is on the stack,
  unless the harness's own code asks (a library calling them then was handed them by the
  candidate: ``tree_map(gc.get_objects, ...)``); ``ctypes`` when the nearest frame outside the
  standard library is the candidate's. Without frames and the heap, the harness's own objects (its
  result, the job's token, its recorder, this guard) stay out of reach;
- limits: ``resource.setrlimit`` / ``prlimit`` are refused;
- imports: the candidate's ``import`` statements (also of modules already loaded) and the imports
  it has the standard library make for it (``importlib.import_module``) must be on the allow-list
  (:data:`~.sandbox_rules.ALLOWED_IMPORT_ROOTS`); a module's own imports are its business.

A refusal calls ``on_violation(message)``, which reports ``sandbox_violation`` and ends the child
with ``os._exit``: a candidate cannot catch it.

The guard's state (on, busy) lives on the :class:`SandboxGuard`, which only the audit hook (a list
no Python code can read) and the harness's frame hold. The functions it puts in the library's
place (``builtins.__import__``, the thread and ``fork_exec`` starters) close over immutable
configuration only and refuse through an audit event (:data:`REFUSE_EVENT`) that the hook acts
on: a candidate that got hold of one of them (through ``__closure__``) finds nothing to switch off.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import sysconfig
from collections.abc import Callable
from typing import Any, NamedTuple

#: How subprocess.Popen starts a program; allowed where Popen is (Triton's own compiler calls on devices).
LIBRARY_SPAWN_EVENTS = frozenset({"os.posix_spawn", "os.exec"})
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
        "resource.setrlimit",
        "resource.prlimit",
    }
)
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
#: Refused when the candidate asks for them, itself or through standard-library code acting for it
#: (:func:`_asked_by_candidate`; ``dataclasses`` and ``namedtuple`` use exec / _getframe for their own).
_ASKED_EVENTS = frozenset(
    {"exec", "compile", "code.__new__", "function.__new__", "sys._getframe", "sys._getframemodulename"}
)
#: Refused whenever the candidate's code is on the stack, unless the harness's own code asks.
_ON_STACK_EVENTS = frozenset(
    {
        "sys._current_frames",
        "sys.settrace",
        "sys.setprofile",
        "sys.addaudithook",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "gc.freeze",
    }
)
#: Attribute reads that hand out frames or code objects (audited as ``object.__getattr__``).
_FRAME_ATTRS = frozenset(
    {"gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "tb_frame", "f_code", "__code__"}
)
_WATCHED = frozenset(
    {
        "open",
        "subprocess.Popen",
        "import",
        "object.__setattr__",
        "object.__delattr__",
        "object.__getattr__",
        *_PROCESS_EVENTS,
        *_FS_EVENTS,
        *_ASKED_EVENTS,
        *_ON_STACK_EVENTS,
    }
)
_WATCHED_PREFIXES = ("socket.", "ctypes.")
#: The audit event a replaced library function raises to have the hook refuse (its only argument: the message).
REFUSE_EVENT = "akg.guard.refuse"


def _module_files(*names: str) -> tuple[str, ...]:
    files = []
    for name in names:
        try:
            module = importlib.import_module(name)
        except ImportError:  # typing_extensions is torch's dependency, but not Python's
            continue
        if getattr(module, "__file__", None):
            files.append(os.path.realpath(module.__file__))
    return tuple(files)


#: Pure-Python modules outside the standard library that the guard treats as standard library:
#: code that acts for whoever calls it (typing_extensions evaluates annotations it is given).
STDLIB_LIKE: tuple[str, ...] = _module_files("typing_extensions")
#: Standard-library modules that read frames on their caller's behalf for their own bookkeeping (a
#: class's module name) and hand nothing of it back.
FRAME_HELPERS: tuple[str, ...] = _module_files("collections", "typing", "typing_extensions", "enum", "dataclasses")
#: Standard-library modules that compile code of their own making for their caller (the methods of
#: a dataclass or a namedtuple); typing is not one: it evaluates annotation strings it is handed.
CODEGEN_HELPERS: tuple[str, ...] = _module_files("collections", "dataclasses")
#: events that make code from source or code objects, and the frame reads
_CODE_EVENTS = frozenset({"exec", "compile", "code.__new__", "function.__new__"})


def _stdlib_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {os.path.realpath(paths[key]) for key in ("stdlib", "platstdlib") if key in paths}
    return tuple(sorted(d + os.sep for d in dirs))


class _Config(NamedTuple):
    """What the guard's checks depend on; immutable, so a function closing over it gives nothing away."""

    candidate_file: str
    own_file: str
    stdlib_dirs: tuple[str, ...]
    library_dirs: tuple[str, ...]
    harness_dir: str = ""


@functools.lru_cache(maxsize=4096)
def _kind(config: _Config, filename: str) -> str:
    """``candidate``, ``guard``, ``harness``, ``frozen``, ``generated``, ``stdlib``, ``library`` or
    ``other`` (in a cache no code can write)."""
    if filename == config.candidate_file:
        return "candidate"
    if filename.startswith("<frozen"):
        return "frozen"
    if filename.startswith("<"):
        return "generated"  # code made by exec: the methods dataclasses and namedtuple write
    real = os.path.realpath(filename)
    if real == config.own_file:
        return "guard"
    if config.harness_dir and real.startswith(config.harness_dir):
        return "harness"
    if (real.startswith(config.stdlib_dirs) and "site-packages" not in real) or real in STDLIB_LIKE:
        return "stdlib"
    if real.startswith(config.library_dirs):
        return "library"
    return "other"


def _frames(start: Any) -> Any:
    frame = start
    while frame is not None:
        yield frame
        frame = frame.f_back


def _nearest(config: _Config, start: Any, skip: tuple[str, ...]) -> tuple[str, Any]:
    """Kind and frame of the first frame from ``start`` whose kind is not in ``skip`` (``other``, None: none)."""
    for frame in _frames(start):
        kind = _kind(config, frame.f_code.co_filename)
        if kind not in skip:
            return kind, frame
    return "other", None


def _candidate_on_stack(config: _Config, start: Any) -> bool:
    return any(frame.f_code.co_filename == config.candidate_file for frame in _frames(start))


def _asked_by_candidate(
    config: _Config, start: Any, importing: bool = False, helpers: tuple[str, ...] = FRAME_HELPERS
) -> bool:
    """Whether the code that raised an event is the candidate's, or standard-library code (or code
    exec made) that the candidate called, unless one of ``helpers`` is on the way (it does its own
    bookkeeping: ``@dataclass`` reads ``__code__`` through ``inspect.signature``). Code exec made
    that raises the event itself, while the candidate's code is on the stack, is the candidate's:
    it may be a string the candidate had a library evaluate. ``importing``: a module's own
    top-level code (its fixed imports, run when the candidate first imports it) is not the
    candidate asking; ``importlib.import_module`` on its behalf is."""
    kind, frame = _nearest(config, start, ("guard", "frozen"))
    if kind == "candidate":
        return True
    if kind == "generated":
        return _candidate_on_stack(config, frame)
    if kind != "stdlib":
        return False
    for outer in _frames(frame):
        filename = outer.f_code.co_filename
        kind = _kind(config, filename)
        if kind == "stdlib" and (_is_helper(filename, helpers) or (importing and outer.f_code.co_name == "<module>")):
            return False
        if kind not in ("guard", "frozen", "stdlib", "generated"):
            return kind == "candidate"
    return False


@functools.lru_cache(maxsize=1024)
def _is_helper(filename: str, helpers: tuple[str, ...]) -> bool:
    return os.path.realpath(filename) in helpers


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
        self.backend = backend
        self.on_violation = on_violation
        self.config = _Config(
            candidate_file=candidate_file,
            own_file=os.path.realpath(__file__),
            stdlib_dirs=_stdlib_dirs(),
            library_dirs=tuple(os.path.realpath(d) + os.sep for d in library_dirs),
            harness_dir=os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep,
        )
        self._busy = False
        self.active = False

    # --- classification -------------------------------------------------------------------------
    def _caller(self) -> str:
        """Kind of the nearest frame outside the guard, the import machinery and the stdlib."""
        return _nearest(self.config, sys._getframe(1), ("guard", "frozen", "stdlib"))[0]

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

    def _link_stays_inside(self, target: Any, link: Any) -> bool:
        """Whether a symbolic link at ``link`` to ``target`` resolves inside the directory (a relative
        target is read from the link's own directory): code outside the child must never follow
        one of the child's files out of it."""
        if isinstance(target, int) or isinstance(link, int):
            return False
        try:
            target, link = os.fsdecode(target), os.fsdecode(link)
        except TypeError:
            return False
        return self._inside(os.path.join(os.path.dirname(os.path.abspath(link)), target))

    # --- the hook -------------------------------------------------------------------------------
    def install(self) -> None:
        """Install the audit hook (irreversible) and the thread-start and import refusals."""
        sys.addaudithook(self._hook)
        _patch_threads(self.config, self.backend)
        _patch_fork_exec(self.config, self.backend)
        _patch_import(self.config)
        self.active = True

    def _refuse(self, message: str) -> None:
        self.active = False
        self.on_violation(message)

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if self._busy or not self.active:
            return
        if event == "object.__getattr__":
            if len(args) < 2 or args[1] not in _FRAME_ATTRS:
                return
        elif not (event in _WATCHED or event == REFUSE_EVENT or event.startswith(_WATCHED_PREFIXES)):
            return
        self._busy = True
        try:
            if event == REFUSE_EVENT:
                self._refuse(str(args[0]) if args else "was refused")
            elif _kind(self.config, sys._getframe(1).f_code.co_filename) != "guard":
                self._check(event, args)  # the guard's own replacements read frames for their checks
        finally:
            self._busy = False

    def _check(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = [*args, None, None, None][:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            if writing and not self._inside(path):
                shown = os.fspath(path) if isinstance(path, (str, bytes, os.PathLike)) else "?"
                self._refuse(f"tried to open {shown} for writing outside its directory")
            return
        if event.startswith("socket."):
            self._refuse(f"tried to use the network ({event})")
            return
        if event in _PROCESS_EVENTS:
            # subprocess.Popen starts its program with os.posix_spawn where it can (Linux): the
            # library-caller rule of the Popen event below applies to that spawn too.
            if event in LIBRARY_SPAWN_EVENTS and self.backend != "interpreter" and self._caller() == "library":
                return
            self._refuse(f"tried to create or signal a process or change its limits ({event})")
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
            if event == "os.symlink" and len(args) >= 2 and not self._link_stays_inside(args[0], args[1]):
                self._refuse("tried to make a link to a file outside its directory (os.symlink)")
            return
        if event == "import":
            if not _asked_by_candidate(self.config, sys._getframe(1), importing=True):
                return
            from ascend_kernel_gym.evaluation.sandbox_rules import ALLOWED_IMPORT_ROOTS, FORBIDDEN_MODULES

            module = str(args[0]) if args else ""
            root = module.split(".")[0]
            if root not in ALLOWED_IMPORT_ROOTS or root in FORBIDDEN_MODULES:
                self._refuse(f"tried to import the forbidden module {module}")
            return
        if event in ("object.__setattr__", "object.__delattr__"):
            target = args[0] if args else None
            if isinstance(target, type) and _asked_by_candidate(self.config, sys._getframe(1)):
                owner = getattr(target, "__module__", "")
                if owner != _CANDIDATE_MODULE:
                    self._refuse(f"tried to modify the library class {owner}.{target.__name__} (monkeypatching)")
            return
        if event == "object.__getattr__":
            if _asked_by_candidate(self.config, sys._getframe(1)):
                self._refuse(f"tried to read `.{args[1]}` (frames and code objects are off limits)")
            return
        if event in _ASKED_EVENTS:
            helpers = CODEGEN_HELPERS if event in _CODE_EVENTS else FRAME_HELPERS
            if _asked_by_candidate(self.config, sys._getframe(1), helpers=helpers):
                self._refuse(f"tried to use {event}")
            return
        if event in _ON_STACK_EVENTS:
            # Nothing of Triton's or PyTorch's reads the heap, traces or lists threads while a
            # candidate's call runs; a library calling it then was handed it by the candidate
            # (``tree_map(gc.get_objects, ...)``). Only the harness's own code may.
            start = sys._getframe(1)
            origin = _nearest(self.config, start, ("guard", "frozen"))[0]
            if origin != "harness" and _candidate_on_stack(self.config, start):
                self._refuse(f"tried to use {event}")
            return
        if event.startswith("ctypes."):
            if self._caller() == "candidate":
                self._refuse(f"tried to use {event}")


def _refuse_through_hook(message: str) -> None:
    sys.audit(REFUSE_EVENT, message)


def _patch_import(config: _Config) -> None:
    """Check ``import`` statements in candidate code even for modules already in ``sys.modules``
    (those raise no ``import`` audit event)."""
    import builtins

    from ascend_kernel_gym.evaluation.sandbox_rules import ALLOWED_IMPORT_ROOTS, FORBIDDEN_MODULES

    original = builtins.__import__
    candidate_file = config.candidate_file

    def guarded_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        caller = sys._getframe(1)
        asker = caller.f_code.co_filename
        if asker == candidate_file or (_kind(config, asker) == "generated" and _candidate_on_stack(config, caller)):
            root = str(name).split(".")[0]
            if level or root not in ALLOWED_IMPORT_ROOTS or root in FORBIDDEN_MODULES:
                _refuse_through_hook(f"tried to import the forbidden module {name}")
        return original(name, globals, locals, fromlist, level)

    builtins.__import__ = guarded_import


def _refusing(config: _Config, backend: str, original: Callable[..., Any], message: str) -> Callable[..., Any]:
    """``original``, refused while candidate code is on the stack, unless Triton's own code
    on a device backend is the nearest caller outside the standard library."""

    def start(*args: Any, **kwargs: Any) -> Any:
        caller = sys._getframe(1)
        if _candidate_on_stack(config, caller) and not (
            backend != "interpreter" and _nearest(config, caller, ("guard", "frozen", "stdlib"))[0] == "library"
        ):
            _refuse_through_hook(message)
        return original(*args, **kwargs)

    return start


def _patch_fork_exec(config: _Config, backend: str) -> None:
    try:
        import _posixsubprocess
    except ImportError:  # pragma: no cover - not a POSIX system
        return
    original = getattr(_posixsubprocess, "fork_exec", None)
    if original is not None:
        _posixsubprocess.fork_exec = _refusing(config, backend, original, "tried to start a process (fork_exec)")


def _patch_threads(config: _Config, backend: str) -> None:
    import _thread
    import threading

    for module, name in (
        (_thread, "start_new_thread"),
        (_thread, "start_new"),
        (_thread, "start_joinable_thread"),
        (threading, "_start_new_thread"),
        (threading, "_start_joinable_thread"),
    ):
        original = getattr(module, name, None)
        if original is not None:
            setattr(module, name, _refusing(config, backend, original, "tried to start a thread"))


_CANDIDATE_MODULE = "akg_candidate"
