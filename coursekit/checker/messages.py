"""Failure messages in two versions: the full one for the instructor's record, a safe one for the student's feedback.

A test's message is the test's own text: before a test cell runs, the checker rewrites (in its own compiled copy)
every ``assert ..., <message>`` and every ``msg=`` argument so that an f-string message becomes a ``CheckMessage``: a
``str`` with the message as usual, plus ``.summary``, the same text in which every interpolated value is replaced by
a *data summary* (a number, a shape, "a tensor of shape (2, 3) and dtype float32", "a text of 12 characters", never
the text itself). So no string a submission returned, and no input a hidden test drew, reaches feedback through a
message, while the message still names the mistake. ``torch.testing.assert_close``'s own report (the ``m`` of
``msg=lambda m: ...``, or its message when a test gives none) is kept line by line only where a line matches its
known numeric forms.
"""
from __future__ import annotations

import ast
import re

SUMMARY_LIMIT = 400
TORCH_LINES = [re.compile(p) for p in (
    r"(Tensor-likes|Scalars) are not (close|equal)!",
    r"Mismatched elements: \d+ / \d+ \([\d.]+%\)",
    r"Greatest (absolute|relative) difference: \S+ at index \([\d, ]*\)( \(up to \S+ allowed\))?",
    r"(Absolute|Relative) difference: \S+( \(up to \S+ allowed\))?",
    r"Expected \S+ but got \S+\.",
    r"The values for attribute '(shape|dtype|device|layout|stride|requires_grad)' do not match: [\w.\[\](), ]+\.",
    r"The length of the sequences mismatch: \d+ != \d+",
    r"The failure occurred for item (\[\d+\])+",
    r"Booleans mismatch: (True|False) is not (True|False)",
    r"No comparison pair was able to handle inputs of type <class '[\w.]+'> and <class '[\w.]+'>\.",
    r"",
)]
# Quoted words an exception message of Python or a library may keep: the names of the types data crosses as (what a
# test holds of the student's work), besides the identifiers of the test's own code (``code_words``).
TYPE_NAMES = frozenset({"int", "float", "complex", "bool", "str", "bytes", "list", "tuple", "dict", "set", "NoneType",
                        "Tensor", "Size", "dtype", "ndarray", "Tokenizer", "StudentObject", "function", "object"})


class CheckMessage(str):
    """A failure message (its ``str`` value) with ``summary``: the same message safe to show a student."""

    summary: str = ""

    def __new__(cls, full: str, summary: str):
        message = super().__new__(cls, full)
        message.summary = summary
        return message


def summary_of(value, spec: str = "") -> str:
    """What a student may see of ``value``: a number, a shape (a tuple of a few ints), a kind and a size; never
    text, and never the elements of a list (which may be a hidden test's inputs)."""
    import torch

    from .bridge import StudentObject

    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return _formatted(value, spec) if abs(value) < 10 ** 15 else f"an integer of {len(str(abs(value)))} digits"
    if isinstance(value, float):
        return _formatted(value, spec or ".6g")
    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, torch.Tensor):
        text = f"a tensor of shape {tuple(value.shape)} and dtype {str(value.dtype).replace('torch.', '')}"
        if value.numel() == 1 and not value.is_complex():
            text += f" (value {_formatted(value.item(), '.6g')})"
        return text
    if type(value).__module__ == "numpy" and hasattr(value, "shape"):
        return f"a numpy array of shape {tuple(value.shape)} and dtype {value.dtype}"
    if isinstance(value, tuple) and len(value) <= 8 and all(type(x) is int and 0 <= x <= 1 << 20 for x in value):
        return str(value)  # a shape
    if isinstance(value, (list, tuple)):
        noun = "tuple" if isinstance(value, tuple) else "list"
        return f"a {noun} of {len(value)} item{'' if len(value) == 1 else 's'}"
    if isinstance(value, dict):
        return f"a dict of {len(value)} item{'' if len(value) == 1 else 's'}"
    if isinstance(value, str):
        return f"a text of {len(value)} character{'' if len(value) == 1 else 's'}"
    if isinstance(value, StudentObject):
        return "an object of your code"
    if isinstance(value, type):
        return f"the type {value.__name__}" if value.__module__ in ("builtins", "torch") else "a type"
    if type(value).__name__ == "Tokenizer":
        return f"a tokenizers.Tokenizer with {value.get_vocab_size()} tokens"
    return f"a {type(value).__name__}" if type(value).__module__ in ("builtins", "torch") else "a value"


def _formatted(number, spec: str) -> str:
    try:
        return format(number, spec)
    except (ValueError, TypeError):
        return repr(number)


def _render(parts: tuple, values: tuple, trusted: tuple) -> CheckMessage:
    """``parts``: literal strings and (index, conversion, spec) for each value."""
    full, safe = [], []
    for part in parts:
        if isinstance(part, str):
            full.append(part)
            safe.append(part)
            continue
        index, conversion, spec = part
        value = values[index]
        shown = {"r": repr, "s": str, "a": ascii}.get(conversion, lambda v: v)(value)
        try:
            full.append(format(shown, spec))
        except (ValueError, TypeError):
            full.append(str(shown))
        safe.append(torch_text(str(value)) if trusted[index] else summary_of(value, spec if not conversion else ""))
    return CheckMessage("".join(full), "".join(safe))


def torch_text(text: str) -> str:
    """torch.testing's report, line by line, keeping only lines of its known numeric forms."""
    kept = []
    for line in str(text).split("\n"):
        if any(p.fullmatch(line.strip()) for p in TORCH_LINES):
            kept.append(line)
        elif not kept or kept[-1] != "…":
            kept.append("…")
    return "\n".join(kept).strip()


def exception_text(text: str, allowed: frozenset[str] = TYPE_NAMES) -> str:
    """An exception message from Python or a library, with every quoted part replaced unless it is one of ``allowed``
    (``'list' object has no attribute 'double'`` stays when ``double`` is in the test's code; a quoted text or key
    that came from data does not)."""
    def quoted(match):
        inner = match.group(0)[1:-1]
        return match.group(0) if inner in allowed else "‹…›"
    pattern = r"'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\""
    rest = re.sub(pattern, "", str(text))
    if "'" in rest or '"' in rest or "\\" in rest:  # a quote or an escape outside a quoted part: data may follow it
        return "(the error's message is not shown)"
    return re.sub(pattern, quoted, str(text))[:SUMMARY_LIMIT]


def code_words(source: str) -> frozenset[str]:
    """The identifiers of a test's code (names, attributes, functions): what its own error messages may quote."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return frozenset()
    words = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.FunctionDef):
            words.add(node.name)
        elif isinstance(node, (ast.keyword, ast.arg)) and node.arg:
            words.add(node.arg)
    return frozenset(words)


def opaque(value) -> CheckMessage:
    """A message that is not a literal or an f-string: shown to the instructor, not to the student."""
    return CheckMessage(str(value), "(the test's message is not shown)")


def literal(value) -> CheckMessage:
    return CheckMessage(str(value), str(value))


# ------------------------------------------------------------------------------------------ compile-time rewriting
class _Rewrite(ast.NodeTransformer):
    """``assert x, MSG`` and ``f(..., msg=MSG)``: MSG becomes a CheckMessage built from the test's own text."""

    def visit_Assert(self, node):
        self.generic_visit(node)
        if node.msg is not None:
            node.msg = self.message(node.msg)
        return node

    def visit_keyword(self, node):
        self.generic_visit(node)
        if node.arg == "msg":
            node.value = self.message(node.value)
        return node

    def message(self, expr, trusted_names=frozenset()):
        if isinstance(expr, ast.Lambda) and len(expr.args.args) == 1 and not expr.args.vararg:
            expr.body = self.message(expr.body, {expr.args.args[0].arg})
            return expr
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return _call("literal", [expr])
        if isinstance(expr, ast.JoinedStr):
            return self.fstring(expr, trusted_names)
        return _call("opaque", [expr])

    @staticmethod
    def fstring(node, trusted_names):
        parts, values, trusted = [], [], []
        for piece in node.values:
            if isinstance(piece, ast.Constant):
                parts.append(ast.Constant(piece.value))
                continue
            spec = ""
            if piece.format_spec is not None:
                if all(isinstance(p, ast.Constant) for p in piece.format_spec.values):
                    spec = "".join(p.value for p in piece.format_spec.values)
            conversion = {115: "s", 114: "r", 97: "a"}.get(piece.conversion, "")
            parts.append(ast.Tuple([ast.Constant(len(values)), ast.Constant(conversion), ast.Constant(spec)],
                                   ast.Load()))
            trusted.append(ast.Constant(isinstance(piece.value, ast.Name) and piece.value.id in trusted_names))
            values.append(piece.value)
        return _call("render", [ast.Tuple(parts, ast.Load()), ast.Tuple(values, ast.Load()),
                                ast.Tuple(trusted, ast.Load())])


HELPER = "__check_message__"


def _call(name, args):
    return ast.Call(ast.Attribute(ast.Name(HELPER, ast.Load()), name, ast.Load()), args, [])


class _Helpers:
    render = staticmethod(_render)
    literal = staticmethod(literal)
    opaque = staticmethod(opaque)


HELPERS = _Helpers()


def rewrite(tree: ast.Module) -> ast.Module:
    """The test's syntax tree with its messages built as CheckMessages (the namespace needs ``HELPER: HELPERS``)."""
    return ast.fix_missing_locations(_Rewrite().visit(tree))
