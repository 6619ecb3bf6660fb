"""Where numba caches the compiled kernels: a folder this user can write, said in one line.

The kernels are decorated ``@numba.njit(cache=True)`` (``_kernels.py``, ``_gram.py``,
``losses.py``), and numba picks their cache folder as each module is imported: ``NUMBA_CACHE_DIR``
when set, else the package's own ``__pycache__``, else the user's cache folder
(``$XDG_CACHE_HOME/numba`` or ``~/.cache/numba``); when it can write none of them it refuses to
import the module ("cannot cache function ...: no locator available"). That happens to a
site-wide install used by another account, or in a container running as a user without a home.

:func:`setup`, run by ``mixlinreg/__init__.py`` before any kernel module is imported, checks the
folder numba would use first. When this process cannot write it, it picks the first folder it can
write of: the package's ``__pycache__`` (when ``NUMBA_CACHE_DIR`` was the one that failed),
numba's user cache folder, and a private folder of this user under the temporary folder
(``mixlinreg-numba-<uid>``, used only if this user owns it and no one else can write it); it sets
``NUMBA_CACHE_DIR`` to it (so worker processes cache there too, quietly), copies into it the
kernels already compiled next to the package (a site-wide install its administrator ran once
starts at once), and logs one line naming the folder it could not write and the one it uses. With
no writable folder at all, the kernels compile in memory in every process (one line says so).
Nothing is done, or said, when the first folder is writable or the JIT is off
(``NUMBA_DISABLE_JIT=1``).

No stale kernels. numba judges a cached kernel fresh by the source file of the function it
compiled (its modification time and size, or its bytes): a kernel of ``_kernels.py`` that inlines
a loss of ``losses.py`` is loaded from the cache unchanged after ``losses.py`` is edited, and runs
the old loss, silently (a documented numba limitation: functions of other files are not tracked).
:func:`setup` therefore registers cache locators (:func:`register_locators`) that add to every
cached function of this package a digest of the source of everything the kernels compile
(:func:`kernel_sources`: every module of the package with a numba-compiled function, and every
package module they import, transitively). An edit to any of them, or an upgrade, changes the
digest, numba finds every cached kernel of the package out of date and compiles it again (and
overwrites the old entries); the folders stay where they are.

A damaged cache file of the package (a truncated ``.nbc``, a garbage ``.nbi``: a full disk, a copy
cut short) is read as a missing one (:func:`guard_cache_files`): one line names it, it is removed,
and the kernel compiles again and is cached anew.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path

__all__ = ["setup", "choose", "cache_subfolder", "writable", "PACKAGE", "kernel_sources",
           "kernel_digest", "register_locators", "guard_cache_files"]

logger = logging.getLogger("mixlinreg")
#: the package folder, whose ``__pycache__`` numba uses when ``NUMBA_CACHE_DIR`` is unset
PACKAGE = Path(__file__).resolve().parent
#: set for child processes: the line already said (a worker does not say it again)
_SAID = "_MIXLINREG_NUMBA_CACHE_SAID"
#: what :func:`setup` decided in this process (for tests and the first-use notice)
DECISION = {}


#: a module whose functions numba compiles: a decorator of numba's, or one of its compilers called
_JITTED = re.compile(rb"^[ \t]*@[ \t]*(?:(?:nb|numba)\.)?(?:njit|jit|vectorize|guvectorize|cfunc|"
                     rb"stencil|generated_jit)\b|(?:\bnb|\bnumba)\.(?:njit|jit)\([ \t]*[A-Za-z_]\w*[ \t]*[,)]", re.M)
#: a relative import: its dots, the module after them and what it imports
_RELATIVE = re.compile(rb"^[ \t]*from[ \t]+(\.+)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]+)", re.M)
#: an absolute import of the package
_ABSOLUTE = re.compile(rb"^[ \t]*(?:from|import)[ \t]+mixlinreg((?:\.\w+)*)", re.M)


def _module_file(folder: Path, dotted: str):
    """The file of module ``dotted`` under ``folder`` (a ``.py`` or a package's ``__init__``)."""
    base = folder.joinpath(*dotted.split(".")) if dotted else folder
    for f in (base.with_suffix(".py") if dotted else None, base / "__init__.py"):
        if f is not None and f.is_file():
            return f
    return None


def _imports(path: Path, package: Path, text: bytes):
    """The package's files that ``path`` imports (relative and absolute imports, anywhere in it)."""
    out = []
    for dots, mod, names in _RELATIVE.findall(text):
        folder = path.parent
        for _ in range(len(dots) - 1):
            folder = folder.parent
        mod = mod.decode()
        sub = folder.joinpath(*mod.split(".")) if mod else folder
        package_names = False
        for name in names.strip(b"() \t\\").split(b","):
            words = name.split()
            f = _module_file(sub, words[0].decode()) if words else None
            if f is not None:  # ``from . import _numerics``: a module
                out.append(f)
            else:  # a name defined in the module ``mod`` (or in the package's ``__init__``)
                package_names = True
        target = _module_file(folder, mod) if package_names else None
        if target is not None:
            out.append(target)
    for mod in _ABSOLUTE.findall(text):
        f = _module_file(package, mod.decode().lstrip("."))
        if f is not None:
            out.append(f)
    return out


def _kernel_texts(package: Path) -> dict:
    """``{file: bytes}`` of :func:`kernel_sources` (each file read once)."""
    texts = {}
    for f in package.rglob("*.py"):
        try:
            texts[f.resolve()] = f.read_bytes()
        except OSError:
            continue
    todo = [f for f, text in texts.items() if _JITTED.search(text)]
    seen = set(todo)
    while todo:
        f = todo.pop()
        for g in _imports(f, package, texts[f]):
            g = g.resolve()
            if g in texts and g not in seen:
                seen.add(g)
                todo.append(g)
    return {f: texts[f] for f in sorted(seen)}


def kernel_sources(package=None) -> list:
    """The source files of everything numba compiles in ``package`` (default: this package):
    every module with a numba-compiled function and every package module they import,
    transitively (the kernels inline functions and read constants of those modules); sorted."""
    return list(_kernel_texts(Path(PACKAGE if package is None else package).resolve()))


def kernel_digest(package=None) -> str:
    """SHA-256 of :func:`kernel_sources` (each file's path in the package and its bytes)."""
    package = Path(PACKAGE if package is None else package).resolve()
    h = hashlib.sha256()
    for f, text in _kernel_texts(package).items():
        h.update(f.relative_to(package).as_posix().encode() + b"\0")
        h.update(text + b"\0")
    return h.hexdigest()


def _locators_home():
    """numba's cache implementation class holding ``_locator_classes`` (its name varies)."""
    from numba.core import caching

    return getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")


def register_locators(digest=None):
    """Put, before numba's cache locators, one keyed copy of each that serves only this package's
    files and adds ``digest`` (default :func:`kernel_digest`) to the source stamp by which numba
    judges a cached kernel fresh. Idempotent: a second call only updates the digest."""
    home = _locators_home()
    digest = kernel_digest() if digest is None else digest
    classes = list(home._locator_classes)
    if getattr(classes[0], "_mixlinreg_keyed", False):
        for cls in classes:
            if getattr(cls, "_mixlinreg_keyed", False):
                cls.digest = digest
        return digest
    keyed = [_keyed(base, digest) for base in classes]
    home._locator_classes = keyed + classes
    return digest


def _ours(cache_path) -> bool:
    """Whether numba's cache folder ``cache_path`` is one of this package's (its ``__pycache__``,
    or its sub-folder of ``NUMBA_CACHE_DIR`` or of numba's user cache folder)."""
    try:
        path = Path(cache_path).resolve()
    except (OSError, ValueError):
        return False
    return path == PACKAGE / "__pycache__" or path.name == cache_subfolder()


def _damaged(path, exc):
    """Say once that a cache file was damaged, and remove it (the kernel compiles again)."""
    try:
        Path(path).unlink(missing_ok=True)
        fate = "removed it; the kernel compiles again and is cached anew"
    except OSError as err:
        fate = f"could not remove it ({err.strerror or err}): delete the folder {Path(path).parent}"
    logger.warning("mixlinreg: the compiled-kernel cache file %s was damaged (%s: %s); %s",
                   path, type(exc).__name__, exc, fate)


def guard_cache_files():
    """Make numba read a damaged cache file of this package (a truncated ``.nbc``, a garbage
    ``.nbi``: a disk that filled up, a copy cut short) as a missing one: the file is removed, one
    line names it, and the kernel compiles again, instead of every later command failing on an
    unpickling error. Other packages' cache files are read as numba reads them. Idempotent."""
    from numba.core import caching

    cls = caching.IndexDataCacheFile
    if getattr(cls, "_mixlinreg_guarded", False):
        return
    load_index, load_data = cls._load_index, cls._load_data

    def _load_index(self):
        try:
            return load_index(self)
        except (KeyboardInterrupt, SystemExit, MemoryError):
            raise
        except Exception as exc:
            if not _ours(self._cache_path):
                raise
            _damaged(self._index_path, exc)
            return {}

    def _load_data(self, name):
        try:
            return load_data(self, name)
        except OSError:
            raise  # numba's own case: a data file removed while the index names it
        except (KeyboardInterrupt, SystemExit, MemoryError):
            raise
        except Exception as exc:
            if not _ours(self._cache_path):
                raise
            _damaged(self._data_path(name), exc)
            raise OSError(f"damaged cache file {self._data_path(name)}") from None

    cls._load_index, cls._load_data = _load_index, _load_data
    cls._mixlinreg_guarded = True


def _inside(py_file) -> bool:
    try:
        return Path(py_file).resolve().is_relative_to(PACKAGE)
    except (OSError, ValueError):
        return False


def _keyed(base, digest):
    """A locator like ``base`` for the package's files only, whose stamp carries ``digest``."""

    class Keyed(base):
        _mixlinreg_keyed = True

        @classmethod
        def from_function(cls, py_func, py_file):
            if not _inside(py_file):
                return None
            return super().from_function(py_func, py_file)

        def get_source_stamp(self):
            return (super().get_source_stamp(), "mixlinreg kernel sources", type(self).digest)

    Keyed.digest = digest
    Keyed.__name__ = Keyed.__qualname__ = f"MixlinregKeyed{base.__name__.lstrip('_')}"
    return Keyed


def cache_subfolder(source_dir=None) -> str:
    """The sub-folder numba gives the modules of ``source_dir`` (default: the package) under
    ``NUMBA_CACHE_DIR`` or its user cache folder: ``<folder name>_<sha1 of its absolute path>``."""
    path = os.path.abspath(PACKAGE if source_dir is None else source_dir)
    return f"{os.path.basename(path)}_{hashlib.sha1(path.encode()).hexdigest()}"


def writable(folder) -> str | None:
    """None when this process can create ``folder`` and a file in it (numba's own test), else
    the reason (``"Permission denied"``, ``"Not a directory"``, ...)."""
    try:
        os.makedirs(folder, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def _user_cache(environ) -> Path:
    """numba's user-wide cache folder (its ``appdirs`` ``user_cache_dir`` for ``"numba"``)."""
    if sys.platform.startswith("linux") or os.name == "posix" and sys.platform != "darwin":
        base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return Path(base) / "numba"
    try:  # macOS, Windows: numba's own rule
        from numba.misc.appdirs import AppDirs

        return Path(AppDirs(appname="numba", appauthor=False).user_cache_dir)
    except Exception:  # noqa: BLE001 - no user cache folder then
        return Path(os.path.expanduser("~")) / ".cache" / "numba"


def _private_tmp():
    """``<tmp>/mixlinreg-numba-<uid>``, made with mode 0700; None if that name is taken by a
    folder another user owns or can write (cached machine code is loaded and run: it must be
    this user's own), or if there is no temporary folder."""
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    try:
        folder = Path(tempfile.gettempdir()) / f"mixlinreg-numba-{uid if uid is not None else 'user'}"
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            pass
        st = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_mode & 0o022 or (uid is not None and st.st_uid != uid):
        return None
    return folder


def choose(environ=None):
    """Where numba should cache the kernels, as a dict: ``folder`` (the folder the package's
    kernels go to, None: no writable folder), ``env`` (the ``NUMBA_CACHE_DIR`` value that makes
    numba use it: None to leave the environment alone, ``""`` for the package's ``__pycache__``),
    ``failed`` (what could not be written, None when the first choice works), ``why`` and
    ``tried`` (the folders tried after it)."""
    environ = os.environ if environ is None else environ
    sub = cache_subfolder()
    in_tree = PACKAGE / "__pycache__"
    user = environ.get("NUMBA_CACHE_DIR", "")
    first = Path(user) / sub if user else in_tree
    why = writable(first)
    out = dict(folder=first, env=None, failed=None, why=None, tried=[])
    if why is None:
        return out
    out.update(failed=f"NUMBA_CACHE_DIR={user}" if user else str(in_tree), why=why)

    def candidates():  # the private temporary folder is made only when it is needed
        if user:
            yield "", in_tree
        user_wide = _user_cache(environ)
        yield str(user_wide), user_wide / sub
        tmp = _private_tmp()
        if tmp is not None:
            yield str(tmp), tmp / sub

    for env, folder in candidates():
        out["tried"].append(str(folder))
        if writable(folder) is None:
            out.update(folder=folder, env=env)
            return out
    out.update(folder=None, env=None)
    return out


def _seed(folder):
    """Copy the kernels compiled next to the package (every ``__pycache__`` holding numba index
    files) into ``folder``'s base, where missing or older; best effort, atomic per file."""
    base = Path(folder).parent
    for pycache in PACKAGE.rglob("__pycache__"):
        try:
            files = [f for f in pycache.iterdir() if f.suffix in (".nbi", ".nbc")]
        except OSError:
            continue
        if not files or pycache == folder:
            continue
        dest = base / cache_subfolder(pycache.parent)
        for f in files:
            target = dest / f.name
            try:
                if target.exists() and target.stat().st_mtime >= f.stat().st_mtime:
                    continue
                dest.mkdir(parents=True, exist_ok=True)
                part = dest / f"{f.name}.part.{os.getpid()}"
                shutil.copy2(f, part)
                os.replace(part, target)
            except OSError:
                continue


def _compile_in_memory():
    """The kernels of this package compile without a cache (numba's ``enable_caching`` skips
    functions of ``mixlinreg`` modules); other packages' functions are left as they are."""
    from numba.core import dispatcher

    original = dispatcher.Dispatcher.enable_caching
    if getattr(original, "_mixlinreg_in_memory", False):
        return

    def enable_caching(self):
        if (getattr(self.py_func, "__module__", "") or "").split(".")[0] == __name__.split(".")[0]:
            return  # no folder to cache in: compiled in memory, in each process
        original(self)

    enable_caching._mixlinreg_in_memory = True
    dispatcher.Dispatcher.enable_caching = enable_caching


def _say(message):
    if os.environ.get(_SAID) != message:
        logger.warning(message)
    os.environ[_SAID] = message


def setup():
    """Make numba cache the kernels in a folder this process can write (see the module's text).

    Returns the decision (:func:`choose`'s dict, or ``{}`` when the JIT is off)."""
    DECISION.clear()
    if os.environ.get("NUMBA_DISABLE_JIT", "0").strip() not in ("", "0"):
        return DECISION
    choice = choose()
    DECISION.update(choice)
    DECISION["kernel_digest"] = register_locators()
    guard_cache_files()
    if choice["failed"] is None:
        return DECISION
    if choice["folder"] is None:
        _compile_in_memory()
        _say(f"mixlinreg: cannot write numba's cache folder {choice['failed']} ({choice['why']}) "
             f"nor {', '.join(choice['tried']) or 'a temporary folder'}; the kernels compile in "
             "memory, again in every process (set NUMBA_CACHE_DIR to a writable folder to cache "
             "them)")
        return DECISION
    os.environ["NUMBA_CACHE_DIR"] = choice["env"]
    config = sys.modules.get("numba.core.config")
    if config is not None:  # numba was imported first: it has read the environment already
        config.CACHE_DIR = choice["env"]
    if choice["env"]:
        _seed(choice["folder"])
    _say(f"mixlinreg: cannot write numba's cache folder {choice['failed']} ({choice['why']}); "
         f"caching the compiled kernels in {choice['folder']} instead")
    return DECISION
