"""The one place where labkit touches private torch APIs: a package by subject, this file gathering its names.

Everything here was read in, and tested against, the torch releases in ``CHECKED_ON``. When torch moves one of
these, only this folder changes, and ``labkit.env.check_torch()`` tells the learner which release was checked.
The subjects: :mod:`.recording` (the backends that hand labkit each stage's graphs), :mod:`.registration` (op
registrations and schemas, and what the doctor reads of every op), :mod:`.config` (configuration and caches),
:mod:`.aoti` (AOTInductor) and :mod:`.tracing` (who calls an op while torch.compile traces, and the graphs
dead-code elimination sees).

Not here: labkit's own decisions (which registrations to keep alive is :mod:`labkit.op_names`'s; which
namespaces to hash, and re-arming after a reset, :mod:`labkit.cache`'s), and anything a learner reads.
Each helper only reads or writes one piece of torch's private state, named in its docstring.
"""

from __future__ import annotations

from .recording import (
    aot_eager_recording, inductor_recording, collect_inductor_code, custom_op_qualname, writes_an_input,
    draws_random_numbers, inductor_falls_back_to_eager_random, own_automatic_dynamic_state,
)
from .registration import (
    custom_op_qualnames, defined_by_custom_op, destroy_custom_op, destroy_library, registration_of,
    current_registration, overload_of, find_overload, resolve_overload, packet_overloads, is_dangling,
    qualname_of, schema_of, argument_names, written_args, declared_output_aliases, return_types, same_storage,
    is_mutable, mark_side_effect, unmark_side_effect, register_ordered_effect, is_impure, has_fake_impl,
    all_op_names, overload_names, schema_arguments, library_op_names,
    op_key,
)
from .config import (
    cpp_compiler, fresh_cache_dir, vec_isa_settled_env, config_patches, import_compiler, cache_counters,
    graph_caches_off, python_defined_op_names, key_every_compile_on, HIGHER_ORDER_WRAPPERS, wrapped_op,
    on_dynamo_compile_start, aliasing_check_raises, dynamo_disabled, torch_counters, clear_torch_counters,
    torch_log_state, set_torch_log_state, TRITON_OP_LOGGER,
)
from .aoti import (
    aoti_compile_and_package, aoti_load_package,
)
from .tracing import (
    is_fake_tensor, compile_stage_on_stack, fake_fallback_namespaces, aot_forward_as_inductor_gets_it,
    inductor_keeps_input_mutations, current_overload_of,
)

# Releases on which every notebook passed in tools/torch_matrix.py's table (docs/torch-versions.json).
# BEGIN checked-on: generated from pyproject.toml [tool.lab] by tools/build_notebooks.py --facts: do not edit
CHECKED_ON = ("2.11.0", "2.12.1", "2.13.0", "2.14.1", "2.15.0")
# END checked-on

# The private names labkit imports, lazily, in the helpers below; the too-old-torch gate looks them
# up first, so that an older torch gets one sentence on ``import labkit``, never an ImportError.
PRIVATE_NAMES = (
    ("torch._library.utils", "is_impure"),
    ("torch._library.custom_ops", "OPDEF_TO_LIB"),
    ("torch._library.simple_registry", "singleton"),
    ("torch._library.effects", "EffectType"),
)


def missing_private_names() -> list[str]:
    """The entries of ``PRIVATE_NAMES`` this torch lacks, as dotted names."""
    import importlib

    missing = []
    for module, name in PRIVATE_NAMES:
        try:
            getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            missing.append(f"{module}.{name}")
    return missing


__all__ = [
    'aot_eager_recording', 'inductor_recording', 'collect_inductor_code', 'custom_op_qualname',
    'writes_an_input', 'draws_random_numbers', 'inductor_falls_back_to_eager_random',
    'own_automatic_dynamic_state', 'custom_op_qualnames', 'defined_by_custom_op', 'destroy_custom_op',
    'destroy_library', 'registration_of', 'current_registration', 'overload_of', 'find_overload',
    'resolve_overload', 'packet_overloads', 'is_dangling', 'qualname_of', 'schema_of', 'argument_names',
    'written_args', 'declared_output_aliases', 'return_types', 'same_storage', 'is_mutable', 'mark_side_effect',
    'unmark_side_effect', 'register_ordered_effect', 'is_impure', 'has_fake_impl', 'torch_log_state',
    'set_torch_log_state', 'TRITON_OP_LOGGER',
    'all_op_names', 'overload_names', 'schema_arguments', 'library_op_names', 'op_key',
    'cpp_compiler', 'fresh_cache_dir', 'vec_isa_settled_env', 'config_patches', 'import_compiler',
    'cache_counters', 'graph_caches_off', 'python_defined_op_names', 'key_every_compile_on',
    'HIGHER_ORDER_WRAPPERS', 'wrapped_op', 'on_dynamo_compile_start', 'aliasing_check_raises',
    'dynamo_disabled', 'torch_counters', 'clear_torch_counters', 'aoti_compile_and_package',
    'aoti_load_package', 'is_fake_tensor', 'compile_stage_on_stack', 'fake_fallback_namespaces',
    'aot_forward_as_inductor_gets_it', 'inductor_keeps_input_mutations', 'current_overload_of', 'CHECKED_ON',
    'PRIVATE_NAMES', 'missing_private_names',
]
