"""``dataclass``, ``field`` and ``replace`` without the standard module's start-up cost.

A short command (``rootguard check``, ``roots``) is mostly interpreter start-up
and imports, and building the ~40 dataclasses on its path was the largest part of
Root Guard's own import time: ``dataclasses`` imports ``inspect`` (~5 ms) and
compiles six methods per frozen class (``exec``, 0.5-0.9 ms a class). This drop-in
keeps the same class statements and the same behaviour for what the package uses
(``frozen``, defaults, ``field(default=, default_factory=, init=, repr=, compare=)``,
``__post_init__``) and builds a class with one small compiled ``__init__`` (so
creating an instance costs what a dataclass's costs; compiled once a class has made a
few instances, as a short command makes only a handful) and shared ``__repr__``,
``__eq__``, ``__hash__`` and frozen ``__setattr__``/``__delattr__``.

The standard functions keep working on these classes: ``dataclasses.fields``,
``replace``, ``asdict`` and ``is_dataclass`` find a ``__dataclass_fields__`` that
is built (by ``dataclasses`` itself) the first time something asks for it. Type
checkers see ``dataclasses.dataclass`` itself.

For the same reason the few pieces of ``typing`` that core uses at run time are here
in run-time form (``typing`` costs ~2 ms to import, a fifth of a bare interpreter's
start): ``NamedTuple`` (the class syntax, built by ``collections.namedtuple``),
``Generic``/``TypeVar`` (subscripting a generic class at run time gives the class),
``cast`` and ``lazy_literals`` (a module's ``Literal`` aliases, built by ``typing``
the first time another module asks for one). Type checkers see ``typing``'s. And
``lazy_pattern``: a module-level regular expression compiled on first use.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name alike)

if TYPE_CHECKING:
    import re
    from collections.abc import Callable
    from dataclasses import FrozenInstanceError, dataclass, field, replace
    from typing import Any, Generic, NamedTuple, TypeVar, cast

    def lazy_literals(module: str, **aliases: tuple[str, ...]) -> Callable[[str], Any]: ...

    def lazy_pattern(pattern: str, flags: int = 0) -> re.Pattern[str]: ...

    def compile_patterns(*modules: str, compile: Callable[[str, int], re.Pattern[str]] | None = None) -> None: ...
else:
    from operator import attrgetter

    _MISSING = object()
    _set = object.__setattr__

    class FrozenInstanceError(AttributeError):
        """Assigning to a field of a frozen record (as ``dataclasses.FrozenInstanceError``)."""

    class _Field:
        __slots__ = ("default", "default_factory", "init", "repr", "compare")

        def __init__(self, default, default_factory, init, repr, compare):
            if default is not _MISSING and default_factory is not _MISSING:
                raise ValueError("cannot specify both default and default_factory")
            self.default = default
            self.default_factory = default_factory
            self.init = init
            self.repr = repr
            self.compare = compare

    def field(*, default=_MISSING, default_factory=_MISSING, init=True, repr=True, compare=True):
        return _Field(default, default_factory, init, repr, compare)

    def dataclass(cls=None, /, *, frozen=False):
        def wrap(cls):
            return _build(cls, frozen)

        return wrap if cls is None else wrap(cls)

    def replace(obj, /, **changes):
        """``dataclasses.replace`` for a record (and for any dataclass)."""
        names = getattr(type(obj), "_record_init", None)
        if names is None:
            import dataclasses

            return dataclasses.replace(obj, **changes)
        for name in changes:
            if name not in names:
                raise TypeError(f"{type(obj).__qualname__}.__init__() got an unexpected keyword argument {name!r}")
        for name in names:
            if name not in changes:
                changes[name] = getattr(obj, name)
        return obj.__class__(**changes)

    def _build(cls, frozen):
        own = cls.__dict__
        specs = []  # (name, _Field)
        for name, annotation in own.get("__annotations__", {}).items():
            if isinstance(annotation, str) and annotation.startswith(("ClassVar", "typing.ClassVar")):
                continue
            value = own.get(name, _MISSING)
            spec = value if isinstance(value, _Field) else _Field(value, _MISSING, True, True, True)
            if isinstance(value, _Field):
                if spec.default is _MISSING:
                    delattr(cls, name)
                else:
                    setattr(cls, name, spec.default)
            if isinstance(spec.default, (list, dict, set)):
                raise ValueError(f"mutable default {type(spec.default)} for field {name} is not allowed: use default_factory")
            specs.append((name, spec))

        if "__init__" not in own:
            cls.__init__ = _deferred_init(cls, specs, frozen)
        if "__repr__" not in own:
            cls.__repr__ = _repr
        compared = tuple(name for name, spec in specs if spec.compare)
        cls._record_key = attrgetter(*compared) if compared else _no_key
        cls._record_shown = tuple(name for name, spec in specs if spec.repr)
        cls._record_init = frozenset(name for name, spec in specs if spec.init)
        cls._record_fields = tuple(name for name, _ in specs)
        cls._record_specs = tuple(specs)
        cls._record_frozen = frozen
        if "__eq__" not in own:
            cls.__eq__ = _eq
        class_hash = own.get("__hash__", _MISSING)
        explicit_hash = not (class_hash is _MISSING or (class_hash is None and "__eq__" in own))
        if not explicit_hash:
            cls.__hash__ = _hash if frozen else None
        if frozen:
            for name in ("__setattr__", "__delattr__"):
                if name in own:
                    raise TypeError(f"cannot overwrite attribute {name} in class {cls.__name__}")
            cls.__setattr__ = _frozen_setattr
            cls.__delattr__ = _frozen_delattr
        if "__match_args__" not in own:
            cls.__match_args__ = tuple(name for name, spec in specs if spec.init)
        cls.__dataclass_fields__ = _LazyFields()
        return cls

    _COMPILE_AFTER = 16  # instances made through the shared __init__ before a class gets its own

    def _deferred_init(cls, specs, frozen):
        """The class's ``__init__`` until it has made a few instances: one shared, uncompiled
        binding of the arguments (a short command makes a handful of instances of a dozen
        classes, and compiling each class's ``__init__`` would cost more than all of them);
        then the class's own compiled one (as fast as a dataclass's) replaces it. Any
        argument that does not bind goes to the compiled one, which raises the TypeError
        Python raises for a function of those parameters."""
        names = tuple(name for name, spec in specs if spec.init)
        accepted = frozenset(names)
        setter = _set if frozen else setattr
        post_init = "__post_init__" in cls.__dict__
        made = [0]

        def compiled():
            init = _init_function(cls, specs, frozen)
            type.__setattr__(cls, "__init__", init)
            return init

        def __init__(self, *args, **kwargs):
            made[0] += 1
            if made[0] > _COMPILE_AFTER or len(args) > len(names):
                return compiled()(self, *args, **kwargs)
            values = dict(zip(names, args, strict=False))
            for name in kwargs:
                if name in values or name not in accepted:
                    return compiled()(self, *args, **kwargs)
            values.update(kwargs)
            for name, spec in specs:
                if name in values:
                    value = values[name]
                elif spec.default_factory is not _MISSING:
                    value = spec.default_factory()
                elif spec.default is not _MISSING:
                    value = spec.default
                elif spec.init:
                    return compiled()(self, *args, **kwargs)  # a missing argument
                else:
                    continue  # init=False, no default: set by __post_init__
                setter(self, name, value)
            if post_init:
                self.__post_init__()

        __init__.__qualname__ = f"{cls.__qualname__}.__init__"
        return __init__

    def _init_function(cls, specs, frozen):
        params, lines = [], []
        namespace = {"_set": _set, "_MISSING": _MISSING}
        for name, spec in specs:
            if spec.default_factory is not _MISSING:
                namespace[f"_f_{name}"] = spec.default_factory
                value = f"_f_{name}()"
                if spec.init:
                    params.append(f"{name}=_MISSING")
                    value = f"_f_{name}() if {name} is _MISSING else {name}"
            elif spec.init:
                if spec.default is _MISSING:
                    params.append(name)
                else:
                    namespace[f"_d_{name}"] = spec.default
                    params.append(f"{name}=_d_{name}")
                value = name
            else:
                if spec.default is _MISSING:
                    continue  # set by __post_init__
                namespace[f"_d_{name}"] = spec.default
                value = f"_d_{name}"
            # A frozen record writes its instance dict directly: half the cost of a ``_set`` call per field.
            lines.append(f"    _d[{name!r}] = {value}" if frozen else f"    self.{name} = {value}")
        if frozen and lines:
            lines.insert(0, "    _d = self.__dict__")
        if "__post_init__" in cls.__dict__:
            lines.append("    self.__post_init__()")
        source = f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(lines) or "    pass") + "\n"
        exec(source, namespace)  # one small function, as dataclasses generates it
        init = namespace["__init__"]
        init.__qualname__ = f"{cls.__qualname__}.__init__"
        init.__module__ = cls.__module__
        return init

    def _no_key(_obj):
        return ()

    def _repr(self):
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._record_shown)
        return f"{self.__class__.__qualname__}({shown})"

    def _eq(self, other):
        if other.__class__ is self.__class__:
            key = self._record_key
            return key(self) == key(other)
        return NotImplemented

    def _hash(self):
        return hash((self._record_key(self),))

    def _frozen_setattr(self, name, value):
        if name in self._record_fields or type(self)._record_frozen:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def _frozen_delattr(self, name):
        if name in self._record_fields or type(self)._record_frozen:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)

    class _LazyFields:
        """``__dataclass_fields__``, built by ``dataclasses`` on first use (``fields``, ``replace``, ``asdict``)."""

        def __get__(self, obj, owner):
            import dataclasses

            namespace = {"__annotations__": dict(owner.__dict__.get("__annotations__", {})),
                         "__module__": owner.__module__, "__qualname__": owner.__qualname__}
            for name, spec in owner._record_specs:
                namespace[name] = dataclasses.field(
                    default=dataclasses.MISSING if spec.default is _MISSING else spec.default,
                    default_factory=dataclasses.MISSING if spec.default_factory is _MISSING else spec.default_factory,
                    init=spec.init, repr=spec.repr, compare=spec.compare)
            shadow = dataclasses.dataclass(init=False, repr=False, eq=False)(type(owner.__name__, (), namespace))
            fields = shadow.__dataclass_fields__
            type.__setattr__(owner, "__dataclass_fields__", fields)
            type.__setattr__(owner, "__dataclass_params__", shadow.__dataclass_params__)
            return fields

    # -- typing's run-time pieces ------------------------------------------------

    class _NamedTupleMeta(type):
        def __new__(mcls, name, bases, namespace):
            if not bases:  # NamedTuple itself
                return super().__new__(mcls, name, bases, namespace)
            from collections import namedtuple

            names = [n for n in namespace.get("__annotations__", {})]
            defaults = [namespace[n] for n in names if n in namespace]
            cls = namedtuple(name, names, defaults=defaults, module=namespace.get("__module__"))
            for key, value in namespace.items():
                if key not in names and key not in ("__annotations__", "__module__", "__qualname__", "__doc__"):
                    setattr(cls, key, value)
            cls.__qualname__ = namespace.get("__qualname__", name)
            if namespace.get("__doc__"):
                cls.__doc__ = namespace["__doc__"]
            cls.__annotations__ = dict(namespace.get("__annotations__", {}))
            return cls

    class NamedTuple(metaclass=_NamedTupleMeta):
        """``class X(NamedTuple): a: int`` as ``typing`` builds it (a ``collections.namedtuple``)."""

    class Generic:
        """A base that a run-time subscript (``PrefixIndex[V]``) leaves as it is."""

        def __class_getitem__(cls, _item):
            return cls

    def TypeVar(name, *_args, **_kwargs):  # noqa: N802 - typing's name
        return name

    def cast(_type, value):
        return value

    def lazy_literals(module, **aliases):
        """A module ``__getattr__`` giving ``Literal[values]`` for each alias, built on first use."""

        def __getattr__(name):
            if name not in aliases:
                raise AttributeError(f"module {module!r} has no attribute {name!r}")
            import sys
            from typing import Literal

            built = Literal[aliases[name]]
            setattr(sys.modules[module], name, built)
            return built

        return __getattr__

    class _LazyPattern:
        """``re.compile(pattern, flags)``, compiled when first used (a module's patterns cost
        ~0.1 ms each at import, and a short command uses few of them)."""

        def __init__(self, pattern, flags):
            self._args = (pattern, flags)

        def __getattr__(self, name):
            compiled = self.__dict__.get("_compiled")
            if compiled is None:
                import re

                compiled = self.compile_with(re.compile)
            return getattr(compiled, name)

        def compile_with(self, compile):
            """Compile now with ``compile(pattern, flags)`` (once: later calls keep the first)."""
            compiled = self.__dict__.get("_compiled")
            if compiled is None:
                compiled = self.__dict__["_compiled"] = compile(*self._args)
                for method in ("match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer"):
                    self.__dict__[method] = getattr(compiled, method)
            return compiled

        def __repr__(self):
            return f"lazy_pattern({self._args[0]!r}, {self._args[1]!r})"

    def lazy_pattern(pattern, flags=0):
        return _LazyPattern(pattern, flags)

    def compile_patterns(*modules, compile=None):
        """Compile now the module-level lazy patterns of these (imported) modules: what a
        long-running server does in its warm-up, so that no request pays for them.
        ``compile``: what compiles one (``re.compile``'s signature; a ``RegexCache``'s)."""
        import re
        import sys

        for name in modules:
            for value in list(vars(sys.modules[name]).values()):
                if isinstance(value, _LazyPattern):
                    value.compile_with(compile or re.compile)


__all__ = ["FrozenInstanceError", "Generic", "NamedTuple", "TypeVar", "cast", "dataclass", "field",
           "compile_patterns", "lazy_literals", "lazy_pattern", "replace"]
