"""What a function reaches besides its arguments, saved so that each run starts from it and it ends as it began.

:class:`FunctionState` walks closure cells, globals, modules, objects' attributes, optimizers and generators
(``_Reach``), saves them, gives each run its own gradients and optimizer state, says what a run changed, and
puts every value back. :func:`fresh_copy` makes a function Dynamo has never seen, so each experiment compiles
from scratch without ``torch.compiler.reset()``.

Not here: comparing values (:mod:`labkit.compare` says whether two are the same), and running anything
(:mod:`labkit.stages`). No private torch.
"""

from __future__ import annotations

import copy
import functools
import types
from typing import Any, Callable

import torch

from .compare import SCALARS, has_grad_slot, input_problems, labelled, same_value, snapshot_tensor, storage_bytes
from .language import said

_MISSING = type("Missing", (), {"__repr__": lambda self: "<not set>"})()  # a name or attribute that did not exist


def _read(holder, key):
    """What a slot holds: a closure cell (``key`` None) or an entry of a dict (globals, ``__dict__``, ``_buffers``)."""
    if key is None:
        try:
            return holder.cell_contents
        except ValueError:  # an empty cell
            return _MISSING
    return holder.get(key, _MISSING)


def _write(holder, key, value) -> None:
    if key is None:
        if value is _MISSING:
            del holder.cell_contents
        else:
            holder.cell_contents = value
    elif value is _MISSING:
        holder.pop(key, None)
    else:
        holder[key] = value


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _own_dict(target) -> dict | None:
    """``target.__dict__``, or None where reading it fails (a hostile ``__getattr__``): labkit does not look there."""
    try:
        return vars(target)
    except Exception:  # noqa: BLE001
        return None


def _stateful_torch_types() -> tuple[type, ...]:
    """torch objects whose plain attributes are training state a function advances (``scheduler.step()``)."""
    found = [getattr(torch.optim.lr_scheduler, "LRScheduler", None), getattr(torch.amp, "GradScaler", None)]
    return tuple(t for t in found if isinstance(t, type))


def _is_foreign(target) -> bool:
    """torch's and labkit's own objects: their attributes are not the learner's state (schedulers and scalers are)."""
    if isinstance(target, _stateful_torch_types()):
        return False
    return type(target).__module__.split(".")[0] in ("torch", "labkit", "builtins")


def _fresh(label: str, taken) -> str:
    """``label``, or ``label#2``, ``label#3``... where ``label`` already names something else."""
    n = 2
    fresh = label
    while fresh in taken:
        fresh, n = f"{label}#{n}", n + 1
    return fresh


class _Reach:
    """What a function can reach without being passed it: closure cells, globals, modules, objects' attributes.

    ``slots``: the names the function can rebind (a global, a closure cell, an attribute, a
    module's parameter or buffer); ``tensors``: the tensors it can change in place; plus the
    ``torch.Generator`` and optimizer objects it can advance.
    """

    def __init__(self, fn: Callable):
        self.tensors: dict[str, torch.Tensor] = {}
        self.slots: dict[str, tuple] = {}
        self.generators: dict[str, torch.Generator] = {}
        self.optimizers: dict[str, torch.optim.Optimizer] = {}
        self.objects: list = []  # objects whose __dict__ labkit watches for added attributes
        self._seen: set[int] = set()
        self._visit(fn, getattr(fn, "__name__", "fn"), 0)

    def _slot(self, label: str, holder, key, depth: int, where: str | None = None) -> None:
        known = self.slots.get(label)
        if known is not None and (known[0] is holder and known[1] == key):
            return  # the same name, reached twice
        if known is not None:  # another name with the same label (a global w and a closure's w)
            label = _fresh(f"{where}.{label}" if where else label, self.slots)
        self.slots[label] = (holder, key)
        value = _read(holder, key)
        try:
            if value is not _MISSING:
                self._visit(value, label, depth + 1)
        except Exception:  # noqa: BLE001 - an object that fails to be looked at (hostile __getattribute__) is skipped
            pass

    def _visit(self, target, label: str, depth: int) -> None:
        if isinstance(target, torch.Tensor):
            if not target.is_meta and all(target is not t for t in self.tensors.values()):
                self.tensors[_fresh(label, self.tensors)] = target
            return
        if id(target) in self._seen or depth > 3 or isinstance(target, (*SCALARS, type, types.ModuleType)):
            return
        self._seen.add(id(target))
        if isinstance(target, torch.Generator):
            self.generators[label] = target
        elif isinstance(target, torch.optim.Optimizer):
            self.optimizers[label] = target
            for i, param in enumerate(p for group in target.param_groups for p in group["params"]):
                self._visit(param, f"{label}.params[{i}]", depth + 1)
        elif isinstance(target, torch.nn.Module):
            self._module(target, label, depth)
        elif isinstance(target, (list, tuple, dict)):
            for leaf_label, leaf in labelled(target, label):
                self._visit(leaf, leaf_label, depth + 1)
        elif isinstance(target, functools.partial):
            self._visit(target.func, label, depth + 1)
            self._visit([*target.args, *target.keywords.values()], f"{label}.args", depth + 1)
        elif isinstance(target, types.MethodType):
            self._visit(target.__self__, label.rsplit(".", 1)[0], depth + 1)
            self._visit(target.__func__, label, depth + 1)
        elif isinstance(target, types.FunctionType):
            self._function(target, depth)
        elif not _is_foreign(target) and isinstance(_own_dict(target), dict):
            self._object(target, label, depth)

    def _function(self, fn: types.FunctionType, depth: int) -> None:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            self._slot(name, cell, None, depth, where=fn.__name__)
        stored = _stored_global_names(fn.__code__)
        for name in sorted(_global_names(fn.__code__)):
            if name in fn.__globals__ or name in stored:
                self._slot(name, fn.__globals__, name, depth)

    def _methods(self, target, label: str, depth: int) -> None:
        """The functions the object's own class defines (``forward``, ``__call__``, helpers they call)."""
        for klass in type(target).__mro__:
            if klass.__module__.split(".")[0] in ("torch", "builtins"):
                continue
            for value in vars(klass).values():
                if isinstance(value, (types.FunctionType, staticmethod, classmethod)):
                    self._visit(getattr(value, "__func__", value), label, depth + 1)

    def _object(self, target, label: str, depth: int) -> None:
        self.objects.append(target)
        for key in list(vars(target)):
            self._slot(f"{label}.{key}", vars(target), key, depth)
        self._methods(target, label, depth)

    def _module(self, module: torch.nn.Module, label: str, depth: int) -> None:
        for name, sub in module.named_modules(prefix=label):
            self._seen.add(id(sub))
            self.objects.append(sub)
            for holder in (sub._parameters, sub._buffers):
                for key in list(holder):
                    self._slot(f"{name}.{key}", holder, key, depth)
            for key, value in list(vars(sub).items()):
                if not (key.startswith("_") and isinstance(value, dict)):  # torch's own registries
                    self._slot(f"{name}.{key}", vars(sub), key, depth)
            self._methods(sub, name, depth)


def _stored_global_names(code: types.CodeType) -> set[str]:
    """The globals ``code`` (or a function defined in it) rebinds: ``global counter; counter += 1``."""
    import dis

    names = {ins.argval for ins in dis.get_instructions(code) if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _stored_global_names(const)
    return names


def _optimizer_entries(optimizer: torch.optim.Optimizer, label: str) -> dict[str, Any]:
    """An optimizer's state (momentum buffers, step counts...) and its groups' settings, labelled."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    index = {id(p): i for i, p in enumerate(params)}
    entries = {f"{label}.state[{index.get(id(p), '?')}][{key!r}]": value
               for p, state in optimizer.state.items() for key, value in state.items()}
    entries.update({f"{label}.param_groups[{j}][{key!r}]": value for j, group in enumerate(optimizer.param_groups)
                    for key, value in group.items() if key != "params" and isinstance(value, SCALARS)})
    return entries


class FunctionState:
    """What a function reaches outside its arguments, saved so that each run starts from it.

    Each run starts from the caller's values and gets its own gradients and optimizer state;
    :meth:`now` says what a run changed; :meth:`restore` puts back every value, name,
    gradient, generator and random state, so the caller's objects end as they began.
    Tensors are saved storage and all (``snapshot_tensor``): an expanded tensor stays small.
    """

    def __init__(self, fn: Callable):
        reach = _Reach(fn)
        self.tensors = reach.tensors
        self.slots = {label: (holder, key, _read(holder, key)) for label, (holder, key) in reach.slots.items()}
        self.generators = {label: (g, g.get_state()) for label, g in reach.generators.items()}
        self.optimizers = {label: (o, o.state, o.param_groups) for label, o in reach.optimizers.items()}
        self.attributes = [(obj, set(vars(obj))) for obj in reach.objects]
        self.attributes += [(t, set(vars(t))) for t in self.tensors.values()]  # Dynamo marks tensors it compiles
        self.saved = {label: snapshot_tensor(t) for label, t in self.tensors.items()}
        self.saved_grads = {label: t.grad for label, t in self.tensors.items() if has_grad_slot(t)}
        self.before = {label: original for label, (_, _, original) in self.slots.items()}
        self.before.update({label: t for label, t in self.tensors.items()})
        self.before.update({f"{label}.grad": grad for label, grad in self.saved_grads.items()})
        self.before.update({label: state for label, (_, state) in self.generators.items()})
        for label, (optimizer, _, _) in self.optimizers.items():
            self.before.update(_optimizer_entries(optimizer, label))
        self.cpu_rng = torch.get_rng_state()
        self.cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None

    def start_run(self) -> None:
        """Give a run its own gradients (copies of the caller's) and optimizer state (a copy), from saved values."""
        for label, grad in self.saved_grads.items():
            self.tensors[label].grad = None if grad is None else grad.detach().clone()
        for optimizer, state, groups in self.optimizers.values():
            params = {id(p): p for group in groups for p in group["params"]}
            optimizer.state, optimizer.param_groups = copy.deepcopy((state, groups), params)

    def now(self) -> dict[str, Any]:
        """What differs from the start: each changed tensor, name, gradient, generator or optimizer entry (copies)."""
        changed = {label: snapshot_tensor(t) for label, t in self.tensors.items()
                   if same_value(t, self.saved[label]) is not True}
        for label, (holder, key, original) in self.slots.items():
            value = _read(holder, key)
            if value is not original:
                changed[label] = snapshot_tensor(value) if isinstance(value, torch.Tensor) else value
        for label in self.saved_grads:
            grad, original = self.tensors[label].grad, self.saved_grads[label]
            if same_value(grad, original) is not True:
                changed[f"{label}.grad"] = None if grad is None else snapshot_tensor(grad)
        for label, (generator, state) in self.generators.items():
            if not torch.equal(generator.get_state(), state):
                changed[label] = generator.get_state()
        for label, (optimizer, _, _) in self.optimizers.items():
            entries = _optimizer_entries(optimizer, label)
            old = {k: v for k, v in self.before.items() if k.startswith((f"{label}.state[", f"{label}.param_groups["))}
            for name in {**old, **entries}:
                value = entries.get(name, _MISSING)
                if same_value(value, old.get(name, _MISSING)) is not True:
                    changed[name] = snapshot_tensor(value) if isinstance(value, torch.Tensor) else value
        return changed

    def restore(self) -> None:
        """Put every saved value, name, gradient, optimizer state and generator back as it was."""
        with torch.no_grad():
            for label, tensor in self.tensors.items():
                if same_value(tensor, self.saved[label]) is not True:
                    if tensor.shape != self.saved[label].shape:   # fn resized it (resize_): give it its shape back
                        tensor.resize_(self.saved[label].shape)
                    raw, saved = storage_bytes(tensor), storage_bytes(self.saved[label])
                    if raw is not None and saved is not None and raw.numel() == saved.numel():
                        raw.copy_(saved)  # bytes and all: an expanded tensor cannot be written element-wise
                    else:
                        tensor.copy_(self.saved[label])
        for holder, key, original in self.slots.values():
            if _read(holder, key) is not original:
                _write(holder, key, original)
        for obj, keys in self.attributes:
            for key in set(vars(obj)) - keys:
                delattr(obj, key) if isinstance(obj, torch.Tensor) else vars(obj).pop(key, None)
        for label, grad in self.saved_grads.items():
            self.tensors[label].grad = grad  # the caller's own .grad object, which no run wrote to
        for optimizer, state, groups in self.optimizers.values():
            optimizer.state, optimizer.param_groups = state, groups
        for generator, state in self.generators.values():
            generator.set_state(state)
        torch.set_rng_state(self.cpu_rng)
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state_all(self.cuda_rng)

    def take_grads(self) -> dict[str, torch.Tensor | None]:
        """The gradients a backward pass left on the parameters, which start clean for the next one."""
        grads = {}
        for label in self.saved_grads:
            tensor = self.tensors[label]
            grads[label] = None if tensor.grad is None else tensor.grad.detach().clone()
            tensor.grad = None
        return grads

    def problems(self, eager_end: dict, compiled_end: dict) -> tuple[list[str], list[str]]:
        """``(problems, caveats)``: what the two runs left differently, and what labkit could not compare."""
        bad, caveats = {}, []
        for label in dict.fromkeys([*eager_end, *compiled_end]):
            e = eager_end.get(label, self.before.get(label, _MISSING))
            c = compiled_end.get(label, self.before.get(label, _MISSING))
            same = same_value(e, c)
            if same is None:
                caveats.append(said("labkit cannot compare what {label} holds afterwards ({kind})", label=label,
                                    kind=type(e).__name__))
            elif not same:
                bad[label] = [(0, label in eager_end, label in compiled_end)]
        return input_problems(bad, None, what=""), caveats


def fresh_copy(fn: Callable) -> Callable:
    """A function that does what ``fn`` does, but is new to Dynamo, so it compiles from scratch.

    Dynamo keeps its compiled code per code object; a copy of ``fn``'s code object has none
    yet, so no ``torch.compiler.reset()`` (which would also drop the caller's own compiled
    functions and compile callbacks) is needed. Anything that is not a plain function
    (a module, a method, a ``functools.partial``) is called through a fresh wrapper.
    """
    if not isinstance(fn, types.FunctionType):
        target = fn

        def labkit_call(*args):
            return target(*args)

        fn = labkit_call
    fresh = types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    fresh.__kwdefaults__, fresh.__qualname__ = fn.__kwdefaults__, fn.__qualname__
    fresh.__dict__.update(fn.__dict__)
    return fresh
