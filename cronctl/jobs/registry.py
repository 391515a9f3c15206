"""Service discovery: classes registered under the ``cronctl.services`` entry points.

An entry point names either an ``@service`` class (``pkg.mod:Class``) or a module
(``pkg.mod``) whose ``@service`` classes are all registered. An entry point that fails to
import becomes one :class:`Violation` (its traceback summarised to one line); the others
are still loaded.

:func:`resolve_operation` is what dispatch calls on every fire: after the first call for
an operation it is one dict lookup.
"""

from __future__ import annotations

import inspect
import re
import threading
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from cronctl.jobs.decorators import (
    CRON_JOBS_ATTR,
    OPERATION_ATTR,
    SERVICE_ATTR,
    CronJobSpec,
    ServiceInfo,
)
from cronctl.jobs.violation import Violation, did_you_mean, summarize_exception
from cronctl.trust import untrusted_entry_point

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint, EntryPoints
    from pathlib import Path

GROUP = "cronctl.services"
_T = TypeVar("_T")
_NAME = re.compile(r"[A-Za-z0-9._-]+")


class OperationError(LookupError):
    """A ``service:`` operation cannot be resolved: unknown id, or its service failed to
    construct. The message is one line naming the operation."""


@dataclass(frozen=True)
class Operation:
    """One registered operation: ``id`` is ``<namespace>.<name>.<operation>``."""

    id: str
    cls: type
    attr: str  # the attribute name of the method on ``cls``
    where: str  # "pkg.mod:Class.method", for messages


@dataclass(frozen=True)
class DecoratedJob:
    """One ``@cron_job`` on a registered operation."""

    spec: CronJobSpec
    operation_id: str
    where: str


@dataclass
class ServiceRegistry:
    """The result of one discovery. ``resolve`` caches instances and bound methods."""

    operations: Mapping[str, Operation] = field(default_factory=dict)
    cron_jobs: tuple[DecoratedJob, ...] = ()
    violations: tuple[Violation, ...] = ()
    _instances: dict[type, Any] = field(default_factory=dict, repr=False)
    _bound: dict[str, Callable[..., Any]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def resolve(self, op_id: str) -> Callable[..., Any]:
        """The bound method for ``op_id`` (service instantiated once, no arguments)."""
        bound = self._bound.get(op_id)
        if bound is not None:
            return bound
        op_id = op_id.removeprefix("service:")
        op = self.operations.get(op_id)
        if op is None:
            raise OperationError(
                f"no registered service operation {op_id!r}{did_you_mean(op_id, self.operations)}"
            )
        with self._lock:
            bound = self._bound.get(op_id)
            if bound is not None:
                return bound
            instance = self._instances.get(op.cls)
            if instance is None:
                try:
                    instance = op.cls()
                except Exception as exc:
                    raise OperationError(
                        f"cannot create service {_where(op.cls)} for {op_id!r}: "
                        f"{summarize_exception(exc)}"
                    ) from exc
                self._instances[op.cls] = instance
            method: Callable[..., Any] = getattr(instance, op.attr)
            self._bound[op_id] = method
            self._bound[f"service:{op_id}"] = method
        return method


def service_entry_points() -> EntryPoints:
    """The ``cronctl.services`` entry points of the installed distributions."""
    import importlib.metadata

    return importlib.metadata.entry_points(group=GROUP)


def _installed(remember_in: Path | None) -> Iterable[EntryPoint]:
    """The installed entry points, or none without a scan when ``remember_in`` holds the
    digest of this path from a scan that found none."""
    if remember_in is None:
        return service_entry_points()
    from cronctl.jobs import pathscan

    digest = pathscan.path_digest()
    if pathscan.known_absent(remember_in, digest):
        return ()
    found = service_entry_points()
    if not found:
        pathscan.remember_absent(remember_in, digest)
    return found


def discover_services(
    entry_points: Iterable[EntryPoint] | None = None, *, remember_in: Path | None = None,
) -> ServiceRegistry:
    """Load every ``cronctl.services`` entry point (or the ones given) into a registry.

    The installed distributions are read here, when a command needs the job sources, not
    when this module is imported (its types are imported by the job model's builders).
    ``remember_in``: the state directory of a command that only shows the jobs, where a
    path with no entry points is remembered (:mod:`cronctl.jobs.pathscan`)."""
    if entry_points is None:
        entry_points = _installed(remember_in)
    violations: list[Violation] = []
    classes: list[type] = []
    modules: list[types.ModuleType] = []
    seen_eps: set[tuple[str, str]] = set()
    for ep in entry_points:
        if (ep.name, ep.value) in seen_eps:
            continue
        seen_eps.add((ep.name, ep.value))
        source = ep.value
        distrust = untrusted_entry_point(ep)  # (its modules: the import guard's)
        if distrust is not None:
            violations.append(Violation(source, None, None,
                                        f"entry point {ep.name!r} ({GROUP}): {distrust}"))
            continue
        try:
            obj = ep.load()
        except (Exception, SystemExit) as exc:  # anything the plugin's import does
            violations.append(
                Violation(
                    source,
                    None,
                    None,
                    f"entry point {ep.name!r} ({GROUP}) failed to import: "
                    f"{summarize_exception(exc)}",
                )
            )
            continue
        if isinstance(obj, types.ModuleType):
            modules.append(obj)
            found = [
                c
                for c in vars(obj).values()
                if isinstance(c, type)
                and c.__module__ == obj.__name__
                and isinstance(c.__dict__.get(SERVICE_ATTR), ServiceInfo)
            ]
            if not found:
                violations.append(
                    Violation(source, None, None,
                              f"entry point {ep.name!r}: module {obj.__name__} holds no "
                              "@service class")
                )
            classes.extend(found)
        elif isinstance(obj, type) and isinstance(getattr(obj, SERVICE_ATTR, None), ServiceInfo):
            classes.append(obj)
            module = inspect.getmodule(obj)
            if module is not None:
                modules.append(module)
        else:
            violations.append(
                Violation(source, None, None,
                          f"entry point {ep.name!r} names {type(obj).__name__} "
                          f"{getattr(obj, '__qualname__', obj)!r}, not an @service class or a "
                          "module of them")
            )

    operations: dict[str, Operation] = {}
    jobs: list[DecoratedJob] = []
    op_functions: set[int] = set()
    for cls in _unique(classes):
        info: ServiceInfo = getattr(cls, SERVICE_ATTR)
        cls_where = _where(cls)
        bad_name = _check_service_info(info)
        if bad_name:
            violations.append(Violation(cls_where, None, None, bad_name))
            continue
        for attr, fn in _methods(cls):
            op_name = getattr(fn, OPERATION_ATTR, None)
            if op_name is None:
                continue
            where = f"{cls_where}.{attr}"
            if not isinstance(op_name, str) or not _NAME.fullmatch(op_name):
                violations.append(
                    Violation(where, None, None,
                              f"operation name {op_name!r} must be 1+ of [A-Za-z0-9._-]")
                )
                continue
            op_id = f"{info.namespace}.{info.name}.{op_name}"
            if op_id in operations:
                violations.append(
                    Violation(where, None, None,
                              f"operation id {op_id!r} is already defined by "
                              f"{operations[op_id].where}")
                )
                continue
            operations[op_id] = Operation(id=op_id, cls=cls, attr=attr, where=where)
            op_functions.add(id(fn))
            for spec in getattr(fn, CRON_JOBS_ATTR, ()):
                jobs.append(DecoratedJob(spec=spec, operation_id=op_id, where=where))

    violations.extend(_stray_cron_jobs(_unique(modules), op_functions))
    return ServiceRegistry(
        operations=operations, cron_jobs=tuple(jobs), violations=tuple(violations)
    )


def _check_service_info(info: ServiceInfo) -> str:
    for label, value in (("namespace", info.namespace), ("name", info.name)):
        if not isinstance(value, str) or not _NAME.fullmatch(value):
            return f"@service {label} {value!r} must be 1+ of [A-Za-z0-9._-]"
    return ""


def _methods(cls: type) -> list[tuple[str, Any]]:
    """(attribute name, plain function) for every function-like attribute, inherited too,
    read without triggering descriptors."""
    found: list[tuple[str, Any]] = []
    for attr in dir(cls):
        if attr.startswith("__") and attr.endswith("__"):
            continue
        raw = inspect.getattr_static(cls, attr)
        fn = getattr(raw, "__func__", raw)
        if callable(fn):
            found.append((attr, fn))
    return found


def _stray_cron_jobs(modules: list[types.ModuleType], op_functions: set[int]) -> list[Violation]:
    """``@cron_job`` on anything that did not become a registered operation."""
    out: list[Violation] = []
    seen: set[int] = set()
    for module in modules:
        for obj in list(vars(module).values()):
            candidates: list[tuple[Any, type | None]] = []
            if isinstance(obj, type) and obj.__module__ == module.__name__:
                candidates.extend(
                    (getattr(raw, "__func__", raw), obj) for raw in vars(obj).values()
                )
            elif callable(obj) and getattr(obj, "__module__", None) == module.__name__:
                candidates.append((obj, None))
            for fn, owner in candidates:
                if not getattr(fn, CRON_JOBS_ATTR, None) or id(fn) in op_functions:
                    continue
                if id(fn) in seen:
                    continue
                seen.add(id(fn))
                where = f"{fn.__module__}:{fn.__qualname__}"
                if getattr(fn, OPERATION_ATTR, None) is None:
                    why = "is not an @operation; add @operation(\"name\") on an @service class"
                elif owner is None or not isinstance(
                    getattr(owner, SERVICE_ATTR, None), ServiceInfo
                ):
                    why = "is an @operation of a class that is not decorated with @service"
                else:
                    why = (f"belongs to @service class {owner.__qualname__}, which no "
                           f"{GROUP!r} entry point registers")
                for spec in getattr(fn, CRON_JOBS_ATTR):
                    job = spec.id if isinstance(spec.id, str) else None
                    out.append(Violation(where, job, None, f"@cron_job on {where}, which {why}"))
    return out


def _where(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _unique(items: list[_T]) -> list[_T]:
    seen: set[int] = set()
    out: list[_T] = []
    for item in items:
        if id(item) not in seen:
            seen.add(id(item))
            out.append(item)
    return out


# --- the process-wide registry that dispatch resolves against ----------------------

_default: ServiceRegistry | None = None
_default_lock = threading.Lock()


def set_default_registry(registry: ServiceRegistry) -> None:
    """Make ``registry`` the one :func:`resolve_operation` uses (``load_jobs`` calls this)."""
    global _default
    with _default_lock:
        _default = registry


def default_registry() -> ServiceRegistry:
    """The current registry, discovering the entry points on first use."""
    global _default
    registry = _default
    if registry is None:
        with _default_lock:
            if _default is None:
                _default = discover_services()
            registry = _default
    return registry


def resolve_operation(op_id: str) -> Callable[..., Any]:
    """The bound method of a registered operation; raises :class:`OperationError`."""
    return default_registry().resolve(op_id)
