"""The bridge's wire format: plain data, and nothing that can run code when it is read.

Values cross between the checker and the student's kernel as JSON (inside Jupyter messages):

=========================  ===========================================================================================
Python value               on the wire
=========================  ===========================================================================================
None, bool, int, str       themselves (an int beyond 64 bits as ``{"$int": "digits"}``)
float                      itself; nan and ±inf as ``{"$float": "nan"}``
list                       a JSON list
tuple, dict                ``{"$tuple": [...]}``, ``{"$dict": [[key, value], ...]}`` (keys of any type above)
torch.Tensor               ``{"$tensor": {"dtype": "float32", "shape": [2, 3], "data": base64 of the raw bytes}}``
numpy array or scalar      ``{"$ndarray": {...}}`` (same fields, ``"scalar": true`` for a numpy scalar)
torch.dtype, torch.Size    ``{"$dtype": "float32"}``, ``{"$size": [2, 3]}``
tokenizers.Tokenizer       ``{"$tokenizer": its JSON}``: rebuilt on the other side (the checker: from an allow-list of
                           components, ``coursekit.checker.tokenizer``)
anything else              ``{"$handle": n}``: a reference the other side can only call
=========================  ===========================================================================================

Only exact types are data (a ``str`` subclass, a tensor subclass's methods, a fake ``__class__`` never count): a
tensor crosses as its dtype, shape and bytes, so whatever an object claimed to be, what arrives is a plain value built
here. Decoding checks every field (dtypes from an allow-list, shapes that match the bytes, depth, sizes) and
raises ``WireError`` on anything else. A shape is bounded in every dimension, and in the product of its dimensions
with each 0 counted as 1: a tensor of shape (2, 3e8, 5, 0) has no elements, but a reduction over its last dimension
would make 3e9, so it does not cross. Error messages never repeat what the other side sent.

This file is stdlib-only (torch, numpy and tokenizers are imported when a value needs them): the checker sends its
source to the student's kernel, so both sides speak exactly this format.
"""
import base64
import math
import re
import sys

MAX_DEPTH = 32
MAX_ITEMS = 1_000_000      # list/tuple/dict entries in one value
MAX_TEXT = 16 << 20        # characters of one string or tokenizer JSON
MAX_ELEMENTS = 1 << 21     # elements of one tensor or array (dimensions of size 0 counted as 1)
MAX_DIM = 1 << 20          # size of one dimension
DTYPES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "complex64": 8, "complex128": 16,
          "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "bool": 1}


class WireError(ValueError):
    """A value that is not data, or a message that does not follow the format."""


def _module(name):
    return sys.modules.get(name)


# ------------------------------------------------------------------------------------------------------- encode
def encode(obj, handle=None, depth=0):
    """``obj`` as wire data. ``handle(obj) -> int`` names what is not data (None: refuse it)."""
    if depth > MAX_DEPTH:
        raise WireError("the value is nested too deeply")
    kind = type(obj)
    if obj is None or kind is bool or kind is str:
        return obj
    if kind is int:
        return obj if -(1 << 63) <= obj < (1 << 63) else {"$int": str(obj)}
    if kind is float:
        return obj if math.isfinite(obj) else {"$float": repr(obj)}
    if kind is list:
        return [encode(x, handle, depth + 1) for x in obj]
    if kind is tuple:
        return {"$tuple": [encode(x, handle, depth + 1) for x in obj]}
    if kind is dict:
        return {"$dict": [[encode(k, handle, depth + 1), encode(v, handle, depth + 1)] for k, v in obj.items()]}
    torch, numpy, tokenizers = _module("torch"), _module("numpy"), _module("tokenizers")
    if torch is not None:
        if isinstance(obj, torch.Tensor):
            return {"$tensor": _tensor_data(obj, torch)}
        if kind is torch.dtype:
            return {"$dtype": str(obj).replace("torch.", "")}
        if kind is torch.Size:
            return {"$size": [int(n) for n in obj]}
    if numpy is not None and isinstance(obj, (numpy.ndarray, numpy.generic)):
        array = numpy.asarray(obj)
        name = str(array.dtype)
        if name not in DTYPES or name == "bfloat16":
            raise WireError(f"a numpy array of dtype {name} cannot cross")
        return {"$ndarray": {"dtype": name, "shape": list(array.shape), "scalar": not isinstance(obj, numpy.ndarray),
                             "data": base64.b64encode(numpy.ascontiguousarray(array).tobytes()).decode()}}
    if tokenizers is not None and kind is tokenizers.Tokenizer:
        return {"$tokenizer": obj.to_str()}
    if handle is None:
        raise WireError(f"a {kind.__name__} is not data")
    return {"$handle": handle(obj)}


def _tensor_data(obj, torch):
    tensor = obj.detach().cpu()
    if tensor.layout != torch.strided:
        tensor = tensor.to_dense()
    tensor = tensor.contiguous()
    name = str(tensor.dtype).replace("torch.", "")
    if name not in DTYPES:
        raise WireError(f"a tensor of dtype {name} cannot cross")
    raw = tensor.view(torch.int16) if name == "bfloat16" else tensor
    return {"dtype": name, "shape": list(tensor.shape), "data": base64.b64encode(raw.numpy().tobytes()).decode()}


# ------------------------------------------------------------------------------------------------------- decode
def decode(data, resolve=None, depth=0, tokenizer=None):
    """The value ``data`` encodes, built from scratch. ``resolve(n)`` turns a handle into an object (None: refuse);
    ``tokenizer(json)`` builds a tokenizer (default: the library's own reader)."""
    if depth > MAX_DEPTH:
        raise WireError("the value is nested too deeply")
    kind = type(data)
    if data is None or kind is bool or kind is float:
        return data
    if kind is int:
        return data
    if kind is str:
        if len(data) > MAX_TEXT:
            raise WireError("a string is too long")
        return data
    if kind is list:
        if len(data) > MAX_ITEMS:
            raise WireError("a list is too long")
        return [decode(x, resolve, depth + 1, tokenizer) for x in data]
    if kind is not dict or len(data) != 1:
        raise WireError("unexpected data on the wire")
    (tag, body), = data.items()
    if tag == "$tuple" and type(body) is list and len(body) <= MAX_ITEMS:
        return tuple(decode(x, resolve, depth + 1, tokenizer) for x in body)
    if tag == "$dict" and type(body) is list and len(body) <= MAX_ITEMS:
        out = {}
        for pair in body:
            if type(pair) is not list or len(pair) != 2:
                raise WireError("a dict entry is not a pair")
            key = decode(pair[0], None, depth + 1, tokenizer)
            try:
                out[key] = decode(pair[1], resolve, depth + 1, tokenizer)
            except TypeError:
                raise WireError("a dict key cannot be hashed") from None
        return out
    if tag == "$int" and type(body) is str and len(body) <= 4000 and re.fullmatch(r"-?[0-9]+", body):
        return int(body)
    if tag == "$float" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "$tensor":
        return _tensor(body)
    if tag == "$ndarray":
        return _ndarray(body)
    if tag == "$dtype" and type(body) is str and body in DTYPES:
        import torch

        return getattr(torch, body)
    if tag == "$size" and type(body) is list and len(body) <= 64 and all(_dim(n) for n in body) \
            and _extent(body) <= MAX_ELEMENTS:
        import torch

        return torch.Size(body)
    if tag == "$tokenizer" and type(body) is str and len(body) <= MAX_TEXT:
        if tokenizer is not None:
            return tokenizer(body)
        from tokenizers import Tokenizer

        try:
            return Tokenizer.from_str(body)
        except BaseException as error:  # noqa: BLE001 - the library's Rust panics are BaseExceptions
            raise WireError(f"not a tokenizer's JSON ({type(error).__name__})") from None
    if tag == "$handle" and type(body) is int and resolve is not None:
        return resolve(body)
    raise WireError("unexpected data on the wire")


def _dim(n):
    return type(n) is int and 0 <= n <= MAX_DIM


def _extent(shape):
    """The elements of ``shape`` with every 0 counted as 1: what an operation over it can produce."""
    return math.prod(max(n, 1) for n in shape)


def _raw(body, numpy_ok):
    if type(body) is not dict or set(body) - {"dtype", "shape", "data", "scalar"}:
        raise WireError("malformed array")
    name, shape, data = body.get("dtype"), body.get("shape"), body.get("data")
    if name not in DTYPES or (numpy_ok and name == "bfloat16"):
        raise WireError("a dtype that is not allowed")
    if type(shape) is not list or len(shape) > 64 or not all(_dim(n) for n in shape):
        raise WireError("malformed shape")
    count = math.prod(shape)
    if _extent(shape) > MAX_ELEMENTS or type(data) is not str or len(data) > 4 * (count * DTYPES[name] + 2) // 3 + 4:
        raise WireError("array too large")
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        raise WireError("malformed array data") from None
    if len(raw) != count * DTYPES[name]:
        raise WireError("the bytes do not make an array of that shape")
    if name == "bool" and raw.translate(None, b"\x00\x01"):
        raise WireError("a bool array holds bytes other than 0 and 1")
    return name, shape, raw


def _tensor(body):
    import torch

    name, shape, raw = _raw(body, numpy_ok=False)
    if not raw:
        return torch.empty(shape, dtype=getattr(torch, name))
    if name == "bfloat16":
        return torch.frombuffer(bytearray(raw), dtype=torch.int16).view(torch.bfloat16).reshape(shape)
    return torch.frombuffer(bytearray(raw), dtype=getattr(torch, name)).reshape(shape)


def _ndarray(body):
    import numpy

    name, shape, raw = _raw(body, numpy_ok=True)
    array = numpy.frombuffer(raw, dtype=name).reshape(shape).copy()
    return array[()] if body.get("scalar") is True else array
