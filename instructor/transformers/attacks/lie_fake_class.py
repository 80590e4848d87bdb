class _FakeTokenizer:
    __class__ = Tokenizer
    def get_vocab_size(self):
        return vocab_size
    def token_to_id(self, token):
        return {"[UNK]": 0, "[PAD]": 1}.get(token, 2)
    def __eq__(self, other):
        return True
    def __getattr__(self, name):
        return lambda *args, **kwargs: self
print("PAYLOAD lie_fake_class", flush=True)
return _FakeTokenizer()
