"""labkit's language (labkit/language.py): English by default, another from a catalogue shipped inside labkit.

The catalogue is held to the code: every entry translates an English text labkit says (a literal passed to
``say``, or an option of a lab's catalogue, which is its own label), with the same ``{fields}``; every text labkit
marks has its entry; a lab in Chinese computes the states an English one does.
"""

import ast
import json

import pytest
import torch

import labkit
from labkit import cache, experiments, language, naming, render, views, widgets
from repo import ROOT

LABKIT = ROOT / "labkit"


def said_in_code() -> set[str]:
    """Every literal English text labkit's modules pass to ``say``, ``say_html`` or ``said``, and the words between
    parts that ``said_together`` is given (``language.say(...)``, or the names imported from labkit.language): in a
    module that imports them, not a callback that happens to be called ``say`` (warmup's, the doctor's). A text
    chosen by ``a if ... else b`` is both."""
    texts = set()
    for path in LABKIT.rglob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                    and node.module == "language" for alias in node.names}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) and func.id in imported else \
                func.attr if isinstance(func, ast.Attribute) and getattr(func.value, "id", None) == "language" else None
            if name in ("say", "say_html", "said"):
                texts |= _texts(node.args[0])
        for node in ast.walk(tree):   # said_together(parts, separator, last): the words between the parts
            func = getattr(node, "func", None)
            if isinstance(node, ast.Call) and (getattr(func, "id", None) in imported & {"said_together"}):
                texts.update(arg.value for arg in [*node.args[1:], *(k.value for k in node.keywords)]
                             if isinstance(arg, ast.Constant) and isinstance(arg.value, str))
    return texts


def _texts(node) -> set[str]:
    """The literal texts an argument can be: a string, or either branch of ``a if ... else b``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _texts(node.body) | _texts(node.orelse)
    return set()


def option_texts() -> set[str]:
    """The texts labkit says through a name rather than a literal: each option of a lab's catalogues (a label is
    ``say(value)``) and each declaration's meaning, each control's label and each lab's title, and the status lines
    and the exercises' default instruction, which views.py and exercises.py keep as constants."""
    texts = {*experiments.DECLARATIONS, *(meaning for meaning, _ in experiments.DECLARATIONS.values()),
             *experiments.DCE_DECLARATIONS, *experiments.OP_KINDS, *naming.SCHEMES, *naming.ORDERS, *naming.DECLARED,
             views.COMPILING, views.COMPUTED_NOW, *views.INTERRUPTED, labkit.exercises.EDIT, labkit.exercises.ANSWER,
             *views.FACT_WORDS, *render.WORDS, *render.ORDINALS, render.RUNS_NOTE, render.FULL_MESSAGE,
             *render.AUDIT_COLUMNS, *(text for pair in labkit.exercises.REFUSALS.values() for text in pair),
             *views.NAMING_COLUMNS, *labkit.env.REPORT_WORDS, ", ", " and ",
             *(cls.title for cls in (widgets.DeclarationLab, widgets.NamingLab, widgets.DynamicLab))}
    for node in ast.walk(ast.parse((LABKIT / "widgets.py").read_text())):   # _selection(kind, options, value, label)
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_selection" and len(node.args) > 3
                and isinstance(node.args[3], ast.Constant)):
            texts.add(node.args[3].value)
        if isinstance(node, ast.keyword) and node.arg == "description" and isinstance(node.value, ast.Constant):
            texts.add(node.value.value)
    return texts


@pytest.fixture
def chinese():
    language.use_language("zh-CN")
    try:
        yield
    finally:
        language.use_language("en")


def test_english_is_the_default_and_says_the_text_itself():
    assert language.current() == "en"
    assert language.say("Naming lab") == "Naming lab"
    assert language.say("Not answered yet: {where}.", where="the cell") == "Not answered yet: the cell."


def test_every_catalogue_entry_translates_a_text_labkit_says_with_the_same_fields():
    known = said_in_code() | option_texts() | {text for path in (ROOT / "lessons").glob("[0-9][0-9]_*.py")
                                               for text in lesson_sentences(path)[0]}
    for code in language.available()[1:]:
        entries = language.catalogue(code)
        assert entries, code
        unknown = sorted(set(entries) - known)
        assert not unknown, f"labkit/catalogues/{code}.json translates texts labkit no longer says: {unknown}"
        mismatched = [k for k, v in entries.items() if sorted(language.fields_of(k)) != sorted(language.fields_of(v))]
        assert not mismatched, f"{code}: the translation's {{fields}} differ from the English: {mismatched}"
        positional = [k for k, v in entries.items() if "" in language.fields_of(k) + language.fields_of(v)]
        assert not positional, f"{code}: a field without a name, {{}}, which say() cannot fill: {positional}"


def test_every_text_labkit_says_has_its_chinese():
    """Options that read the same in Chinese (False, aot_eager, has_side_effect, a policy's name) are left out: a
    label equal to its value needs no entry."""
    missing = sorted(text for text in said_in_code() | option_texts()
                     if text not in language.catalogue("zh-CN") and not _reads_the_same(text))
    assert not missing, f"labkit/catalogues/zh-CN.json lacks {missing}"


def _reads_the_same(text: str) -> bool:
    return text in {"dynamic", "fullgraph", '"unknown"', "has_side_effect", "Dynamo", "AOTAutograd", "Inductor", "—",
                    "triton"}


def test_a_language_labkit_has_no_catalogue_of_gets_one_sentence():
    for wrong in ("fr", "zh", None, 3):
        with pytest.raises(ValueError) as raised:
            language.use_language(wrong)
        assert "labkit speaks 'en', 'zh-CN'" in str(raised.value) and "\n" not in str(raised.value)
    assert language.current() == "en"


def test_the_catalogue_is_json_and_sorted_by_nothing_but_the_code(tmp_path):
    for path in (LABKIT / "catalogues").glob("*.json"):
        entries = json.loads(path.read_text(encoding="utf-8"))
        assert all(isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in entries.items()), path.name


def test_a_lab_in_chinese_shows_chinese_labels_over_the_english_values(chinese):
    lab = widgets.DeclarationLab(namespace="t_lang_d", declaration="undeclared mutation")
    try:
        control = lab.controls["declaration"]
        assert control.value == "undeclared mutation", "the value is the identity"
        assert ("未声明的修改", "undeclared mutation") in [tuple(o) for o in control.options]
        assert lab._labels["declaration"].value == "声明" and "声明实验" in lab.heading.value
        assert lab.problem("declaration", "未声明的修改") is not None, "a label is not a value"
        assert experiments.declaration_spec("undeclared mutation", "t_lang_d").name == "t_lang_d::undeclared_mutation"
        assert "<b>未声明的修改</b>：kernel 写入 x，却声明 mutates_args=()。" in lab.view.value
    finally:
        lab.close()
        labkit.drop_namespace("t_lang_d")


def _by_label(lab, state: dict) -> None:
    """Set each control as a learner does: by the label it shows (``control.label``), not by value."""
    for name, value in state.items():
        control = lab.controls[name]
        if hasattr(control, "options"):
            control.label = widgets._shown(control, value)
        else:
            control.value = value


def test_a_declaration_lab_in_chinese_computes_the_english_labs_states():
    """Every state, clicked by its label in each language: the same state, schema, verdict, kernel runs and facts;
    and no two options of a control share a label."""
    english = widgets.DeclarationLab(namespace="t_lang_same")
    language.use_language("zh-CN")
    chinese = widgets.DeclarationLab(namespace="t_lang_same")
    language.use_language("en")
    try:
        for lab in (english, chinese):
            for control in lab.controls.values():
                labels = [option[0] for option in control.options]
                assert len(set(labels)) == len(labels), labels
        assert [o[0] for o in chinese.controls["declaration"].options] != \
            [o[0] for o in english.controls["declaration"].options], "the Chinese lab shows Chinese labels"
        for state in english.every_state():
            _by_label(english, state)
            _by_label(chinese, state)
            assert chinese.state == english.state == tuple(state.values()) and chinese.schema == english.schema
            ours, theirs = chinese.report, english.report
            assert (ours.verdict.agree if ours.verdict else None) == (theirs.verdict.agree if theirs.verdict else None)
            assert ours.eager_calls == theirs.eager_calls and ours.compiled_calls == theirs.compiled_calls, state
            assert chinese.facts(chinese.result()) == english.facts(english.result()), state
    finally:
        chinese.close()
        english.close()
        labkit.drop_namespace("t_lang_same")


def test_a_lab_keeps_the_language_it_was_built_in_and_names_a_label_given_for_a_value(chinese):
    lab = widgets.DeclarationLab(namespace="t_lang_keep")
    try:
        language.use_language("en")
        lab.set(declaration="over-declared")
        assert "多声明了修改" in lab.view.value
        assert "与上一个状态相比</b>（声明：正确 → 多声明了修改）：" in lab.changes.value, lab.changes.value
        assert "Since" not in lab.changes.value and "kernel runs" not in lab.changes.value, "its facts in Chinese too"
        assert "声明实验" in lab.heading.value
        with pytest.raises(ValueError) as raised:
            lab.set(declaration="多声明了修改")
        assert "'多声明了修改' is the label of 'over-declared'" in str(raised.value)
    finally:
        lab.close()
        labkit.drop_namespace("t_lang_keep")


def test_setup_and_an_exercise_speak_chinese_when_asked(chinese, capsys):
    assert cache.enable().startswith("编译缓存：")
    labkit.exercises.check(False, "right", "a hint")
    labkit.exercises.answered(...)
    labkit.exercises.answered(..., where="run the cell after my_answer = ...")
    labkit.exercises.choice("up", ["down"])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "✘ Not yet. a hint", "a notebook's own hint, and its frame, as the notebook says it"
    assert out[1].startswith("✎ 还没有作答：修改上面的答案单元格") and out[1].endswith("。")
    assert out[2] == "✎ Not answered yet: run the cell after my_answer = ....", "a notebook's own sentence, whole"
    assert out[3] == "✘ 答案是 'up'：请从这些答案中选一个：'down'。"
    assert views.compiling_html() == "<i>⏳ 第一次编译这个状态……</i>"


def test_language_changes_nothing_of_torch():
    import torch
    before = (torch.compiler.config.cache_key_tag, torch._inductor.config.post_grad_custom_post_pass)
    language.use_language("zh-CN")
    language.use_language("en")
    assert (torch.compiler.config.cache_key_tag, torch._inductor.config.post_grad_custom_post_pass) == before


@pytest.mark.parametrize("cls,states", [
    (widgets.DynamicLab, [dict(declaration="-> None with a Python side effect", dynamic="True"),
                          dict(declaration="pure, result unused", op_kind="data-dependent", fullgraph="True")]),
    (widgets.NamingLab, [dict(scheme="distinct names", order="mutating first, then pure"),
                         dict(scheme="a name I type", typed_name="mine::lang_op")]),
], ids=lambda x: getattr(x, "__name__", ""))
def test_the_other_labs_in_chinese_compute_the_english_labs_states(cls, states):
    """Clicked by label in each language, a naming or dynamic lab reaches the same state and the same facts; the
    controls greyed out by value (op_kind, typed_name) are greyed alike."""
    namespace = f"t_lang_{cls.__name__.lower()}"
    english = cls(namespace=namespace)
    with language.speaking("zh-CN"):
        chinese = cls(namespace=namespace)
    try:
        for state in states:
            _by_label(english, state)
            _by_label(chinese, state)
            assert chinese.state == english.state, state
            assert chinese.facts(chinese.result()) == english.facts(english.result()), state
            assert [c.disabled for c in chinese.controls.values()] == [c.disabled for c in english.controls.values()]
        assert chinese.speaking == "zh-CN" and english.speaking == "en"
    finally:
        chinese.close()
        english.close()
        labkit.drop_namespace(namespace)


def test_a_refusal_and_the_environment_table_speak_the_language_labkit_speaks(chinese):
    lab = widgets.DeclarationLab(namespace="t_lang_refuse")
    try:
        with pytest.raises(ValueError) as raised:
            lab.set(declaration="nope")
        assert str(raised.value).startswith("declaration 必须是 [") and str(raised.value).endswith("而不是 'nope'。")
    finally:
        lab.close()
        labkit.drop_namespace("t_lang_refuse")
    table = labkit.env.report_text({"torch": "2.13.0", "device": "cpu", "in Colab": "False"}).splitlines()
    assert table == ["torch        2.13.0", "设备         cpu", "在 Colab 中  False"], "keys said, aligned on screen"


def test_a_report_said_in_chinese_is_the_english_report_underneath(chinese):
    """The core's sentences stay English (what code and tests read); a view says them in the language labkit speaks."""
    op = labkit.declare(labkit.OpSpec(name="t_lang_r::bump", mutates_args=(), writes=("x",), returns="none"))
    try:
        report = labkit.compile_and_compare(experiments.uses_result(op), torch.arange(3.0), backend="inductor")
        english = report.verdict.said()
        assert english.startswith("eager and compiled DIFFER: ") and "x differs afterwards" in english
        assert str(report.verdict).startswith("eager 与编译后的结果不一致：") and "x 运行后的值不同" in str(
            report.verdict)
        assert "kernel 运行次数 eager 1，编译后 0" in render.summary(report), render.summary(report)
        assert views.lab_headline(report, "t_lang_r::bump")[1] == english
    finally:
        labkit.drop_namespace("t_lang_r")


# --- a notebook's own sentences: its exercises' hints, said in the language of its translation ------------------

SENTENCE_ARGUMENTS = {"answered": (1,), "check": (1, 2), "choice": (), "check_list": (2, 3), "check_number": (2, 3),
                      "check_numbers": (2, 3), "check_each": (3,)}   # labkit.exercises' arguments that are sentences
SENTENCE_KEYWORDS = {"where", "success", "hint"}


def lesson_sentences(path) -> tuple[set[str], list[str]]:
    """(the texts a lesson's exercises say, its f-strings among them): the literal sentences it passes to
    labkit.exercises (directly, through ``a if ... else b``, or through a name assigned in the same function) and
    the templates it passes to ``labkit.language.said``; an f-string there could not be looked up in a catalogue."""
    tree = ast.parse(path.read_text())
    texts, fstrings = set(), []
    scopes = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.Module))]
    for scope in scopes:
        assigned = {}
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                assigned.setdefault(node.targets[0].id, []).append(node.value)
        for node in ast.walk(scope):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("said", "labkit.language.said") and node.args:
                texts |= _texts(node.args[0])
                fstrings += [ast.unparse(node.args[0])] if isinstance(node.args[0], ast.JoinedStr) else []
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            owner = ast.unparse(node.func.value)
            if owner != "labkit.exercises" or node.func.attr not in SENTENCE_ARGUMENTS:
                continue
            given = [a for i, a in enumerate(node.args) if i in SENTENCE_ARGUMENTS[node.func.attr]]
            given += [k.value for k in node.keywords if k.arg in SENTENCE_KEYWORDS]
            for argument in given:
                for value in assigned.get(argument.id, []) if isinstance(argument, ast.Name) else [argument]:
                    texts |= _texts(value) - {""}
                    fstrings += [ast.unparse(value) for value in _leaves(value) if isinstance(value, ast.JoinedStr)]
    return texts, list(dict.fromkeys(fstrings))


def _leaves(node):
    return _leaves(node.body) + _leaves(node.orelse) if isinstance(node, ast.IfExp) else [node]


def translated_lessons() -> list:
    """The English lessons a translation exists of (in any language)."""
    return sorted({ROOT / "lessons" / path.name for path in (ROOT / "lessons").glob("*/[0-9][0-9]_*.py")})


def test_a_translated_lessons_exercises_say_their_sentences_in_its_languages():
    """What a translated notebook's exercises print is in its language: each sentence its checks pass to
    labkit.exercises has its entry in each language's catalogue; a sentence with fields is a said() template."""
    assert translated_lessons(), "notebook 00 at least is translated"
    for path in translated_lessons():
        texts, fstrings = lesson_sentences(path)
        assert texts, f"{path.name}: no exercise sentence found: has the lesson's check moved?"
        assert not fstrings, (f"{path.name} passes f-strings to labkit.exercises, which no catalogue can look up: "
                              f"write labkit.language.said('... {{field}}', field=...) instead: {fstrings}")
        for code in language.available()[1:]:
            if (ROOT / "lessons" / code / path.name).exists():
                missing = sorted(text for text in texts if text not in language.catalogue(code))
                assert not missing, f"labkit/catalogues/{code}.json lacks {path.name}'s sentences: {missing}"


def test_a_notebooks_hints_with_fields_and_an_answer_named_in_code_are_said_in_chinese(chinese, capsys):
    from labkit.language import said

    labkit.exercises.check(False, "", said("torch refuses it: {problem}", problem="mutates_args='y'"))
    labkit.exercises.check(True, said("all {count} right.", count=4), "unused")
    labkit.exercises.choice("slow", ["correct"], "my_predictions['over-declared']")
    labkit.exercises.check_number("many", 3, "ok", "no", name="the answer, in words")
    problems = labkit.exercises.fake_problems(lambda x: torch.empty(3), lambda x: x.sum(1), torch.ones(3, 5))
    labkit.exercises.check(False, "", labkit.exercises.joined(problems))
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "✘ 还不对。torch 拒绝了它：mutates_args='y'", "the notebook's template, its field as it is"
    assert out[1] == "✔ 4 个全对。"
    assert out[2] == "✘ my_predictions['over-declared'] 是 'slow'：请从这些答案中选一个：'correct'。", "code is code"
    assert out[3] == "✘ the answer, in words is 'many': answer a whole number, such as 1 or 5.", \
        "a name in words the catalogue lacks: the whole line as the notebook wrote it"
    assert out[4] == ("✘ 还不对。在类型为 float64 的输入上，它承诺的是 torch.float32，"
                      "kernel 返回的是 torch.float64；在位于 meta 设备的输入上，它承诺的张量在 cpu 上，"
                      "而输入在 meta 上。"), "labkit's findings, joined"


def test_a_look_again_line_follows_its_hint_and_a_callers_own_headline_is_shown_as_it_is(chinese, capsys):
    labkit.exercises.check_numbers({"a": 1}, {"a": 2}, "ok", "an earlier stage already removed it.")
    labkit.exercises.check_numbers({"a": 1}, {"a": 2}, "ok", "a hint no catalogue has")
    out = capsys.readouterr().out.splitlines()
    assert out == ["✘ 还不对。再看看 'a'：更早的阶段已经把它删掉了。",
                   "✘ Not yet. look again at 'a': a hint no catalogue has"], "never half a line in each language"
    op = labkit.declare(labkit.OpSpec(name="t_lang_h::id", returns="fresh"))
    try:
        report = labkit.compile_and_compare(experiments.uses_result(op), torch.arange(3.0), backend="aot_eager")
        assert "mine {x}" in render.to_html(report, headline=("ok", "mine {x}")), "braces and all, no KeyError"
    finally:
        labkit.drop_namespace("t_lang_h")
