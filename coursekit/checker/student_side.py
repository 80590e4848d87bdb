"""What the checker installs in the student's kernel: answer its requests with data (stdlib + ``wire``).

The checker sends this file's source, after ``wire.py``'s, as module ``coursekit_bridge`` into the student's kernel
before the notebook's first cell. Each request is one ``execute_request`` calling ``handle(json)``; the answer is
published as a display message of type ``MIME``. Nothing here is trusted: the submission can replace any of it, and
all it gains is to choose the data its own functions answer with, which the checker then judges.

Requests: ``{"op": "get", "names": [...]}`` (the student's global values) and ``{"op": "call", "target": n, "args":
[...], "kwargs": {...}}`` on a handle. Answers: ``{"values":
{name: data}}`` (``{"$missing": true}`` for an unknown name) or ``{"value": data}``; ``{"raised": {"type", "builtin",
"message"}}`` when the student's code raised; ``{"unsendable": "why"}`` when its result is not data.
"""
import json

MIME = "application/vnd.coursekit.bridge+json"
_objects = {}


def _handle(obj):
    key = id(obj)
    _objects[key] = obj  # kept alive: the checker may call it again
    return key


def _resolve(key):
    if key not in _objects:
        raise WireError("unknown handle")  # noqa: F821 - defined by wire.py, sent before this file
    return _objects[key]


def _answer(request, names):
    op = request.get("op")
    if op == "get":
        return {"values": {name: encode(names[name], _handle) if name in names else {"$missing": True}  # noqa: F821
                           for name in request["names"]}}
    target = _resolve(request["target"])
    if op == "call":
        args = [decode(a, _resolve) for a in request["args"]]  # noqa: F821
        kwargs = {k: decode(v, _resolve) for k, v in request["kwargs"].items()}  # noqa: F821
        return {"value": encode(target(*args, **kwargs))}  # noqa: F821 - a result must be data
    raise ValueError(f"unknown request {op!r}")


def handle(text):
    from IPython import get_ipython
    from IPython.display import publish_display_data

    try:
        reply = _answer(json.loads(text), get_ipython().user_ns)
    except WireError as error:  # noqa: F821
        reply = {"unsendable": str(error)[:300]}
    except BaseException as error:  # noqa: BLE001 - whatever the student's code raised, KeyboardInterrupt included
        try:
            message = str(error)[:4000]
        except BaseException:  # noqa: BLE001
            message = ""
        reply = {"raised": {"type": type(error).__name__[:100], "builtin": type(error).__module__ == "builtins",
                            "message": message}}
    publish_display_data({MIME: reply})
