"""labkit.warmup: Inductor's first compile, done once per process and only on the main thread."""

import threading

from labkit import warmup


def test_warmup_compiles_once_on_the_main_thread():
    said, fresh = [], warmup.status() == "not run"  # another test in this process may have warmed up
    seconds = warmup.run(say=said.append)
    assert seconds is not None and warmup.status().startswith("done")
    assert len(said) == (2 if fresh else 0) and (not fresh or "Warming up Inductor" in said[0])
    # once per process: the second call says nothing more (its test-order-dependent count was the flake: when the
    # doctor's tests ran first on this worker, `said` stayed empty and "== 2" failed)
    assert warmup.run(say=said.append) == seconds and len(said) == (2 if fresh else 0)


def test_warmup_refuses_to_compile_on_another_thread():
    """torch's compiler is not thread-safe (pytorch #105943): labkit never compiles off the main thread."""
    errors = []

    def off_main():
        try:
            warmup.run(say=lambda _: None)
        except warmup.NotOnMainThread as error:
            errors.append(str(error))

    thread = threading.Thread(target=off_main)
    thread.start()
    thread.join()
    assert len(errors) == 1 and "labkit.setup()" in errors[0]
