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
from .language import ENGLISH, Said, current, said, said_together, say
from .language import translation_of as _own

UNANSWERED = ...  # the placeholder exercise cells start with
EDIT = "edit the answer cell above (replace its ...), run it, then run this cell again"
ANSWER = "the answer"
# What these print is said in the language labkit speaks (labkit.language): labkit's own words (EDIT, ANSWER), and a
# notebook's sentence (a hint, where to edit, a success) where the catalogue has it, a sentence with fields coming as
# labkit.language.said(template, ...). A notebook's sentence the catalogue lacks is printed as the notebook wrote
# it, and so is the frame around it: half a line in one language and half in another reads worse than one.
CODE_NAME = re.compile(r"[A-Za-z_][\w.]*(\[.*\])?")   # what an answer is called in code: my_answer, preds['a']


# What an answer that is not the kind asked for gets: (where its name is words, where its name is code), each said.
REFUSALS = {
    "one of": ("{name} is {answer}: answer one of {listed}.", "{code} is {answer}: answer one of {listed}."),
    "list": ("{name} is {answer}: answer a list of {count} numbers, such as {example}.",
             "{code} is {answer}: answer a list of {count} numbers, such as {example}."),
    "number": ("{name} is {answer}: answer a whole number, such as 1 or 5.",
               "{code} is {answer}: answer a whole number, such as 1 or 5."),
}


def _refused(name, answer, kind: str, **fields) -> str:
    """"<name> is <answer>: answer ..." (:data:`REFUSALS`) in the language labkit speaks: its words where the
    catalogue has the name (the default "the answer", a said() one) or where the name is code (an answer's variable,
    the same in every language); else English, as the notebook named it."""
    words, code = REFUSALS[kind]
    own = _own(name)
    if own is not None:
        return say(words, name=own, answer=brief(answer), **fields)
    if CODE_NAME.fullmatch(str(name)):
        return say(code, code=name, answer=brief(answer), **fields)
    return words.format(name=name, answer=brief(answer), **fields)


def answered(value: Any, where: str = EDIT) -> bool:
    """False, with one sentence saying which cell to edit, while ``value`` is still the ``...`` placeholder."""
    if value is UNANSWERED or (isinstance(value, dict) and any(v is UNANSWERED for v in value.values())):
        own = _own(where)
        print("✎ " + (say("Not answered yet: {where}.", where=own) if own is not None
                      else f"Not answered yet: {where}."))
        return False
    return True


def check(passed: bool, success: str, hint: str) -> bool:
    """Print the outcome of a self-check and return it.

    ``passed`` is True or False (a one-element tensor or array also reads as one); anything else,
    e.g. ``a == b`` on whole tensors, raises TypeError with one sentence naming the fix.
    """
    if not isinstance(success, str) or not isinstance(hint, str):   # a said() sentence is a str
        raise TypeError(f"check(passed, success, hint) takes two sentences (str) after passed, "
                        f"not {type(success).__name__} and {type(hint).__name__}.")
    passed = _truth(passed)
    said_now = _own(success if passed else hint)
    if passed:
        print("✔ " + (said_now if said_now is not None else success))
    else:
        print(say("✘ Not yet. {hint}", hint=said_now) if said_now is not None else "✘ Not yet. " + hint)
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
        print("✘ " + _refused(name, answer, "one of", listed=listed))
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
            problems.append(said("on {inputs}, the fake raised {error}: {message}", inputs=label,
                                 error=type(error).__name__, message=(str(error).splitlines() or [""])[0]))
            continue
        real = kernel(*real_inputs)
        problems += [said("on {inputs}, {problem}", inputs=label, problem=problem)
                     for problem in _promise_problems(torch, promised, real, inputs)]
    return problems


def joined(problems) -> Said:
    """Problems (:func:`fake_problems`') as one sentence, "a; b.", for a check's hint: said in its language."""
    return said("{problems}.", problems=said_together(problems, "; ", "; "))


def _variants(torch, inputs):
    """(what, the fake's inputs, the kernel's inputs): as given, in float64, and on the meta device."""
    yield said("the sample inputs"), inputs, inputs
    if any(isinstance(t, torch.Tensor) and t.is_floating_point() for t in inputs):
        doubled = [t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]
        yield said("float64 inputs"), doubled, doubled
    yield said("inputs on the meta device"), [t.to("meta") if isinstance(t, torch.Tensor) else t for t in inputs], \
        inputs


def _promise_problems(torch, promised, real, inputs) -> list[str]:
    if not isinstance(promised, torch.Tensor) or not isinstance(real, torch.Tensor):
        return [] if type(promised) is type(real) else [said("it returned {promised}, the kernel {real}",
                                                              promised=type(promised).__name__,
                                                              real=type(real).__name__)]
    device = next((t.device for t in inputs if isinstance(t, torch.Tensor)), real.device)
    found = []
    if tuple(promised.shape) != tuple(real.shape):
        found.append(said("it promised shape {promised}, the kernel returned {real}", promised=list(promised.shape),
                          real=list(real.shape)))
    if promised.dtype != real.dtype:
        found.append(said("it promised {promised}, the kernel returned {real}", promised=promised.dtype,
                          real=real.dtype))
    if promised.device != device:
        found.append(said("it promised a tensor on {promised}, for inputs on {device}", promised=promised.device,
                          device=device))
    if not found and promised.stride() != real.stride():
        found.append(said("it promised strides {promised}, the kernel returned {real}", promised=promised.stride(),
                          real=real.stride()))
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
        print("✘ " + _refused(name, answer, "list", count=len(truth), example=[0] * len(truth)))
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
        if choice(predictions.get(key), allowed, name=said("the answer for {key}", key=repr(key))) is None:
            return False
    wrong = wrong_keys(predictions, truth, allowed)
    return check(not wrong, said("all {count} right.", count=len(truth)),
                 _look_again(", ".join(wrong or []), hint))


def _look_again(keys: str, hint) -> str:
    """"look again at <keys>: <hint>", said where the hint is (labkit's frame follows the notebook's sentence)."""
    if current() != ENGLISH and _own(hint) is not None:
        return said("look again at {keys}: {hint}", keys=keys, hint=hint if isinstance(hint, Said) else Said(hint))
    return f"look again at {keys}: {hint}"


def check_number(answer: Any, truth: int, success: str, hint: str, name: str = ANSWER) -> bool:
    """Check a whole-number answer: one sentence asking for a whole number when ``answer`` is none, else ✔ or ✘.
    ``name`` says which answer that sentence is about where an exercise asks for several: ``"the answer for 'int'"``."""
    if whole_number(answer) is None:
        print("✘ " + _refused(name, answer, "number"))
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
        return check(not wrong, success, _look_again(", ".join(map(repr, wrong)), hint))
    said = "; ".join(f"{key!r}" + (f" ({hint[key]})" if key in hint else "") for key in wrong)
    return check(not wrong, success, f"look again at {said}.")
