"""Self-checks for exercises: a clear ✔ or ✘ with a hint, never a traceback.

An exercise cell holds the learner's answer (``...`` until answered); the cell after it checks it. Every
message says what to do next and where: which cell to edit, which answers are allowed. The checks accept
an answer's obvious spellings (case, spaces, a plural) and refuse what torch itself refuses.

Not here: the answers (each notebook holds its own, in collapsed solutions), compiling, and private torch.
"""

from __future__ import annotations

import numbers
import re
from typing import Any

from .describe import brief
from .language import say, translated

UNANSWERED = ...  # the placeholder exercise cells start with
EDIT = "edit the answer cell above (replace its ...), run it, then run this cell again"
ANSWER = "the answer"
# labkit's own words here (EDIT, ANSWER) are said in the language labkit speaks (labkit.language); a sentence a notebook
# passes (a hint, where to edit, what its answer is called) is the notebook's, said as it is, and so is the frame
# around it: half a sentence in one language and half in another reads worse than one.


def answered(value: Any, where: str = EDIT) -> bool:
    """False, with one sentence saying which cell to edit, while ``value`` is still the ``...`` placeholder."""
    if value is UNANSWERED or (isinstance(value, dict) and any(v is UNANSWERED for v in value.values())):
        print("✎ " + (say("Not answered yet: {where}.", where=say(where)) if where == EDIT and translated(where)
                      else f"Not answered yet: {where}."))
        return False
    return True


def check(passed: bool, success: str, hint: str) -> bool:
    """Print the outcome of a self-check and return it.

    ``passed`` is True or False (a one-element tensor or array also reads as one); anything else,
    e.g. ``a == b`` on whole tensors, raises TypeError with one sentence naming the fix.
    """
    if not isinstance(success, str) or not isinstance(hint, str):
        raise TypeError(f"check(passed, success, hint) takes two sentences (str) after passed, "
                        f"not {type(success).__name__} and {type(hint).__name__}.")
    passed = _truth(passed)
    print(("✔ " + success) if passed else ("✘ Not yet. " + hint))
    return passed


def choice(answer: Any, allowed, name: str = ANSWER) -> str | None:
    """The allowed word ``answer`` means, or None after one sentence listing the allowed words.

    ``allowed`` is a list of words, or a dict {word: [other spellings]}. Case, surrounding spaces and
    punctuation, underscores vs spaces, and a trailing "s" or "d" do not matter ("Replace" means
    "replaces"); anything else is refused with the list, so that a right idea in another word is told
    how to say it, not that it is wrong.
    """
    word = _meant(answer, allowed)
    if word is None:
        listed = ", ".join(repr(w) for w in _spellings(allowed))
        print("✘ " + (say("{name} is {answer}: answer one of {listed}.", name=say(name), answer=brief(answer),
                          listed=listed) if name == ANSWER and translated(name)
                      else f"{name} is {brief(answer)}: answer one of {listed}."))
    return word


def _spellings(allowed) -> dict:
    return allowed if isinstance(allowed, dict) else {word: [] for word in allowed}


def _meant(answer: Any, allowed) -> str | None:
    """The allowed word ``answer`` means (see :func:`choice`), or None; silent."""
    if isinstance(answer, str):
        wanted = _normal(answer)
        for word, others in _spellings(allowed).items():
            if wanted in {_normal(w) for w in (word, *others)}:
                return word
    return None


def _normal(word: str) -> str:
    word = re.sub(r"[\s_\-]+", " ", word.strip().strip(".!?'\"").lower())
    return re.sub(r"(?<=\w\w)e$", "", re.sub(r"(?<=\w\w)[sd]$", "", word))   # replaces, replaced, replace


def _truth(passed: Any) -> bool:
    """``passed`` as a bool, or TypeError naming what is expected (never an 'ambiguous' raw error)."""
    if isinstance(passed, bool) or type(passed).__name__ == "bool_":  # numpy's bool too
        return bool(passed)
    size = getattr(passed, "numel", getattr(passed, "size", None))
    nested = getattr(passed, "is_nested", False) is True
    try:
        count = None if nested else size() if callable(size) else size
    except Exception:  # noqa: BLE001 - a hostile object: refused below
        count = None
    if count == 1 and hasattr(passed, "item") and isinstance(passed.item(), bool):
        return bool(passed.item())
    raise TypeError(f"check's first argument must be True or False, not {type(passed).__name__}"
                    f"{' (nested)' if nested else ''}: compare whole tensors with torch.equal(a, b) or "
                    f"(a == b).all().item().")


def fake_problems(fake, kernel, *sample_inputs) -> list[str]:
    """What a fake kernel promises wrongly, compared with the real kernel, one sentence each ([] when none).

    The fake runs on the sample inputs as given, again in a second dtype (float64 for float inputs), and on
    ``meta`` copies of them: a fake must follow its inputs' dtype and device, not torch's defaults
    (``torch.empty(n)`` without ``dtype=``/``device=`` passes on a float32 CPU input and is wrong on a
    CUDA one). Shapes, dtypes, devices and strides are compared; values never are.
    """
    import torch

    problems = []
    for label, inputs, real_inputs in _variants(torch, sample_inputs):
        try:
            promised = fake(*inputs)
        except Exception as error:  # noqa: BLE001 - the learner's fake: its error is the finding
            problems.append(f"on {label}, the fake raised {type(error).__name__}: {str(error).splitlines()[0]}")
            continue
        real = kernel(*real_inputs)
        problems += [f"on {label}, {problem}" for problem in _promise_problems(torch, promised, real, inputs)]
    return problems


def _variants(torch, inputs):
    """(what, the fake's inputs, the kernel's inputs): as given, in float64, and on the meta device."""
    yield "the sample inputs", inputs, inputs
    if any(isinstance(t, torch.Tensor) and t.is_floating_point() for t in inputs):
        doubled = [t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]
        yield "float64 inputs", doubled, doubled
    yield "inputs on the meta device", [t.to("meta") if isinstance(t, torch.Tensor) else t for t in inputs], inputs


def _promise_problems(torch, promised, real, inputs) -> list[str]:
    if not isinstance(promised, torch.Tensor) or not isinstance(real, torch.Tensor):
        return [] if type(promised) is type(real) else [f"it returned {type(promised).__name__}, the kernel "
                                                         f"{type(real).__name__}"]
    device = next((t.device for t in inputs if isinstance(t, torch.Tensor)), real.device)
    found = []
    if tuple(promised.shape) != tuple(real.shape):
        found.append(f"it promised shape {list(promised.shape)}, the kernel returned {list(real.shape)}")
    if promised.dtype != real.dtype:
        found.append(f"it promised {promised.dtype}, the kernel returned {real.dtype}")
    if promised.device != device:
        found.append(f"it promised a tensor on {promised.device}, for inputs on {device}")
    if not found and promised.stride() != real.stride():
        found.append(f"it promised strides {promised.stride()}, the kernel returned {real.stride()}")
    return found


# --- a whole number, and several predictions checked at once ------------------------------------


NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def whole_number(answer: Any) -> int | None:
    """``answer`` as an int when it is a whole number (``2``, ``2.0``, ``"2"``, ``"two"``), else None. Silent."""
    if isinstance(answer, bool):
        return None
    if isinstance(answer, str):
        answer = answer.strip().strip(".!").lower()
        if answer in NUMBER_WORDS:
            return NUMBER_WORDS.index(answer)
        return int(answer) if re.fullmatch(r"[+-]?\d+", answer) else None
    if isinstance(answer, int):
        return answer
    if isinstance(answer, float) and answer.is_integer():
        return int(answer)
    return None


def number_list(answer: Any) -> list[float] | None:
    """``answer`` as a list of floats when it is a list of numbers: a list or tuple of real numbers (NumPy's and
    one-element tensors too), or a one-dimensional tensor or array (read with ``.tolist()``); else None. Silent."""
    if getattr(answer, "ndim", None) == 1 and hasattr(answer, "tolist"):
        answer = answer.tolist()
    if not isinstance(answer, (list, tuple)):
        return None
    values = [v.item() if getattr(v, "ndim", None) == 0 and hasattr(v, "item") else v for v in answer]
    if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
        return None
    try:
        return [float(v) for v in values]
    except OverflowError:   # an int too large for a float
        return None


def check_list(answer: Any, truth: list, success: str, hint: str, name: str = ANSWER) -> bool:
    """Check a list-of-numbers answer (a list, a tuple, or a one-dimensional tensor: :func:`number_list`): one
    sentence saying what shape of answer is wanted when ``answer`` is none of these or has the wrong length, else
    ✔ or ✘ with ``hint``."""
    values = number_list(answer)
    if values is None or len(values) != len(truth):
        print("✘ " + (say("{name} is {answer}: answer a list of {count} numbers, such as {example}.", name=say(name),
                          answer=brief(answer), count=len(truth), example=[0] * len(truth))
                      if name == ANSWER and translated(name)
                      else f"{name} is {brief(answer)}: answer a list of {len(truth)} numbers, such as "
                           f"{[0] * len(truth)}."))
        return False
    return check(values == [float(v) for v in truth], success, hint)


def wrong_keys(predictions: dict, truth: dict, allowed) -> list[str] | None:
    """The keys whose prediction differs from ``truth``, sorted; None when an answer is not one of the allowed
    words (``allowed`` as for :func:`choice`) or a key is missing. Silent: a solution cell can assert on it."""
    meant = {key: _meant(predictions.get(key), allowed) for key in truth}
    if None in meant.values():
        return None
    return sorted(key for key in truth if meant[key] != truth[key])


def check_each(predictions: dict, truth: dict, allowed, hint: str) -> bool:
    """Check a dict of predictions, each one of the ``allowed`` words (any spelling :func:`choice` accepts):
    one sentence listing the allowed words for an answer that is none of them, else ✔ or which keys to revisit."""
    for key in truth:
        if choice(predictions.get(key), allowed, name=f"the answer for {key!r}") is None:
            return False
    wrong = wrong_keys(predictions, truth, allowed)
    return check(not wrong, say("all {count} right.", count=len(truth)),
                 f"look again at {', '.join(wrong or [])}: {hint}")


def check_number(answer: Any, truth: int, success: str, hint: str, name: str = ANSWER) -> bool:
    """Check a whole-number answer: one sentence asking for a whole number when ``answer`` is none, else ✔ or ✘.
    ``name`` says which answer that sentence is about where an exercise asks for several: ``"the answer for 'int'"``."""
    if whole_number(answer) is None:
        print("✘ " + (say("{name} is {answer}: answer a whole number, such as 1 or 5.", name=say(name),
                          answer=brief(answer)) if name == ANSWER and translated(name)
                      else f"{name} is {brief(answer)}: answer a whole number, such as 1 or 5."))
        return False
    return check(whole_number(answer) == truth, success, hint)


def check_numbers(predictions: dict, truth: dict, success: str, hint: str | dict) -> bool:
    """Check a dict of whole-number predictions (each read as :func:`whole_number` reads it: ``4``, ``"4"``,
    ``"four"``): one sentence asking for whole numbers when one is none, else ✔ or which keys to revisit.
    ``hint`` is one sentence, or one per key ({key: hint}): then each wrong key is said with its own hint (a key
    without one is named alone)."""
    if not isinstance(predictions, dict):
        print("✘ " + say("the answer is {answer}: keep the dict and fill in its numbers.", answer=brief(predictions)))
        return False
    numbers = {key: whole_number(predictions.get(key)) for key in truth}
    unread = [key for key, number in numbers.items() if number is None]
    if unread:
        print("✘ " + say("the answer for {keys} is not a whole number: answer 0, 1, 2, ...",
                         keys=", ".join(map(repr, unread))))
        return False
    wrong = [key for key in truth if numbers[key] != truth[key]]
    if isinstance(hint, str):
        return check(not wrong, success, f"look again at {', '.join(map(repr, wrong))}: {hint}")
    said = "; ".join(f"{key!r}" + (f" ({hint[key]})" if key in hint else "") for key in wrong)
    return check(not wrong, success, f"look again at {said}.")
