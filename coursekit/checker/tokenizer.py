"""A tokenizer from a submission, rebuilt in the checker from an allow-list of components with bounded parameters.

A ``tokenizers.Tokenizer`` crosses the bridge as its JSON. The library's own reader would build whatever that JSON
describes, including components that make its native code, which no time limit can interrupt, run for hours or fill
memory (a ``Replace`` normalizer that doubles a character 27 times; 200,000 ``Replace`` steps; a backtracking ``Split``
pattern). So the checker reads the JSON itself: every component must be one of those listed here, every parameter of
the expected type and within its bounds, every list and vocabulary of bounded size. From what passes, it writes a new
JSON holding only those fields and lets the library build the tokenizer from that. Anything else is not data
(``WireError``): the test that needed a tokenizer fails, as it would for a function that returned nothing.

The list covers what a course on subword tokenizers builds: BPE, WordPiece, WordLevel and Unigram models, Unicode and
case normalizers, whitespace, punctuation, digit, byte-level and metaspace pre-tokenizers, the usual post-processors
and decoders, padding and truncation.
"""
from __future__ import annotations

import json

from .wire import WireError

MAX_VOCAB = 100_000
MAX_MERGES = 100_000
MAX_TOKEN = 200          # characters of one token
MAX_ADDED = 1_000
MAX_SEQUENCE = 8         # components in a Sequence
MAX_JSON = 16 << 20


class _Refused(Exception):
    pass


# -------------------------------------------------------------------------------------------------- field types
def _bool(v):
    if type(v) is not bool:
        raise _Refused("a flag is not true or false")
    return v


def _int(lo, hi):
    def check(v):
        if type(v) is not int or not lo <= v <= hi:
            raise _Refused("a number is out of bounds")
        return v
    return check


def _float(lo, hi):
    def check(v):
        if type(v) not in (int, float) or not lo <= v <= hi:
            raise _Refused("a number is out of bounds")
        return float(v)
    return check


def _str(most=MAX_TOKEN):
    def check(v):
        if type(v) is not str or len(v) > most:
            raise _Refused("a text is too long")
        return v
    return check


def _enum(*allowed):
    def check(v):
        if v not in allowed:
            raise _Refused("a setting has an unknown value")
        return v
    return check


def _opt(inner):
    return lambda v: None if v is None else inner(v)


def _list(inner, most):
    def check(v):
        if type(v) is not list or len(v) > most:
            raise _Refused("a list is too long")
        return [inner(x) for x in v]
    return check


def _pair(first, second):
    def check(v):
        if type(v) is not list or len(v) != 2:
            raise _Refused("a pair is malformed")
        return [first(v[0]), second(v[1])]
    return check


def _vocab(v):
    if type(v) is not dict or len(v) > MAX_VOCAB:
        raise _Refused("the vocabulary is too large")
    token, index = _str(), _int(0, MAX_VOCAB * 2)
    return {token(k): index(i) for k, i in v.items()}


def _merge(v):
    if type(v) is str:
        if len(v) > 2 * MAX_TOKEN + 1 or v.count(" ") != 1:
            raise _Refused("a merge is malformed")
        return v
    return _pair(_str(), _str())(v)


def _record(fields: dict):
    """A dict with exactly the keys of ``fields`` (each optional, defaults left to the library)."""
    def check(v):
        if type(v) is not dict or set(v) - set(fields):
            raise _Refused("a component has fields the checker does not accept")
        return {k: fields[k](x) for k, x in v.items()}
    return check


def _typed(kinds: dict, sequence_key: str | None = None):
    """A component ``{"type": name, ...}`` whose type is one of ``kinds`` (each with its fields); ``Sequence`` holds
    up to MAX_SEQUENCE of them under ``sequence_key``."""
    def check(v):
        if type(v) is not dict:
            raise _Refused("a component is malformed")
        kind = v.get("type")
        if kind == "Sequence" and sequence_key:
            return {"type": "Sequence", sequence_key: _list(_typed(kinds), MAX_SEQUENCE)(v.get(sequence_key))}
        if kind not in kinds:
            raise _Refused("a component is not one the checker accepts")
        body = {k: x for k, x in v.items() if k != "type"}
        return {"type": kind, **_record(kinds[kind])(body)}
    return check


_BYTE_LEVEL = {"add_prefix_space": _bool, "trim_offsets": _bool, "use_regex": _bool}
_METASPACE = {"replacement": _str(1), "prepend_scheme": _enum("always", "never", "first"), "split": _bool,
              "add_prefix_space": _bool, "str_rep": _str(1)}

NORMALIZERS = _typed({
    **{name: {} for name in ("NFC", "NFD", "NFKC", "NFKD", "Lowercase", "Nmt")},
    "StripAccents": {}, "Strip": {"strip_left": _bool, "strip_right": _bool},
    "BertNormalizer": {"clean_text": _bool, "handle_chinese_chars": _bool, "strip_accents": _opt(_bool),
                       "lowercase": _bool},
}, "normalizers")

PRE_TOKENIZERS = _typed({
    "Whitespace": {}, "WhitespaceSplit": {}, "BertPreTokenizer": {}, "UnicodeScripts": {},
    "Punctuation": {"behavior": _enum("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")},
    "Digits": {"individual_digits": _bool}, "ByteLevel": _BYTE_LEVEL, "Metaspace": _METASPACE,
    "CharDelimiterSplit": {"delimiter": _str(1)},
}, "pretokenizers")

_SPECIAL = _record({"id": _str(), "type_id": _int(0, 8)})
_PIECE = lambda v: _record({"SpecialToken": _SPECIAL, "Sequence": _record({"id": _enum("A", "B"),  # noqa: E731
                                                                           "type_id": _int(0, 8)})})(v)
_TOKENS = _record({"id": _str(), "ids": _list(_int(0, MAX_VOCAB * 2), 16), "tokens": _list(_str(), 16)})

POST_PROCESSORS = _typed({
    "TemplateProcessing": {"single": _list(_PIECE, 16), "pair": _list(_PIECE, 16),
                           "special_tokens": lambda v: {_str()(k): _TOKENS(x) for k, x in _small_dict(v).items()}},
    "BertProcessing": {"sep": _pair(_str(), _int(0, MAX_VOCAB * 2)), "cls": _pair(_str(), _int(0, MAX_VOCAB * 2))},
    "RobertaProcessing": {"sep": _pair(_str(), _int(0, MAX_VOCAB * 2)), "cls": _pair(_str(), _int(0, MAX_VOCAB * 2)),
                          "trim_offsets": _bool, "add_prefix_space": _bool},
    "ByteLevel": _BYTE_LEVEL,
}, "processors")

DECODERS = _typed({
    "BPEDecoder": {"suffix": _str(16)}, "ByteLevel": _BYTE_LEVEL, "WordPiece": {"prefix": _str(16), "cleanup": _bool},
    "Metaspace": _METASPACE, "Fuse": {}, "ByteFallback": {},
    "Strip": {"content": _str(1), "start": _int(0, 16), "stop": _int(0, 16)},
}, "decoders")

MODELS = _typed({
    "BPE": {"dropout": _opt(_float(0.0, 1.0)), "unk_token": _opt(_str()), "continuing_subword_prefix": _opt(_str(16)),
            "end_of_word_suffix": _opt(_str(16)), "fuse_unk": _bool, "byte_fallback": _bool, "ignore_merges": _bool,
            "vocab": _vocab, "merges": _list(_merge, MAX_MERGES)},
    "WordPiece": {"unk_token": _str(), "continuing_subword_prefix": _str(16),
                  "max_input_chars_per_word": _int(1, 1000), "vocab": _vocab},
    "WordLevel": {"vocab": _vocab, "unk_token": _str()},
    "Unigram": {"unk_id": _opt(_int(0, MAX_VOCAB)), "byte_fallback": _bool,
                "vocab": _list(_pair(_str(), _float(-1e6, 0.0)), MAX_VOCAB)},
})

_ADDED = _record({"id": _int(0, MAX_VOCAB * 2), "content": _str(), "single_word": _bool, "lstrip": _bool,
                  "rstrip": _bool, "normalized": _bool, "special": _bool})
_PADDING = _record({"strategy": lambda v: v if v == "BatchLongest" else _record({"Fixed": _int(1, 4096)})(v),
                    "direction": _enum("Left", "Right"), "pad_to_multiple_of": _opt(_int(1, 4096)),
                    "pad_id": _int(0, MAX_VOCAB * 2), "pad_type_id": _int(0, 8), "pad_token": _str()})
_TRUNCATION = _record({"direction": _enum("Left", "Right"), "max_length": _int(1, 100_000),
                       "strategy": _enum("LongestFirst", "OnlyFirst", "OnlySecond"), "stride": _int(0, 4096)})

TOKENIZER = _record({
    "version": _enum("1.0"), "truncation": _opt(_TRUNCATION), "padding": _opt(_PADDING),
    "added_tokens": _list(_ADDED, MAX_ADDED), "normalizer": _opt(NORMALIZERS), "pre_tokenizer": _opt(PRE_TOKENIZERS),
    "post_processor": _opt(POST_PROCESSORS), "decoder": _opt(DECODERS), "model": MODELS,
})


def _small_dict(v):
    if type(v) is not dict or len(v) > 16:
        raise _Refused("a table is too large")
    return v


def rebuild(text: str):
    """The tokenizer ``text`` (its JSON) describes, built from the allowed components only; WireError otherwise."""
    from tokenizers import Tokenizer

    if type(text) is not str or len(text) > MAX_JSON:
        raise WireError("a tokenizer's JSON is too large")
    try:
        clean = TOKENIZER(json.loads(text))
    except (_Refused, ValueError, RecursionError) as error:
        raise WireError(f"a tokenizer the checker does not accept ({error if isinstance(error, _Refused) else 'not JSON'})") from None
    if "model" not in clean:
        raise WireError("a tokenizer the checker does not accept (no model)")
    try:
        return Tokenizer.from_str(json.dumps(clean))
    except BaseException as error:  # noqa: BLE001 - the library's Rust panics are BaseExceptions
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        raise WireError(f"not a tokenizer's JSON ({type(error).__name__})") from None
